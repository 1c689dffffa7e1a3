package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReady(t *testing.T) {
	tests := map[string]struct {
		status corev1.ConditionStatus // "": no Ready condition
		want   bool
	}{
		"Ready True":         {status: corev1.ConditionTrue, want: true},
		"Ready False":        {status: corev1.ConditionFalse},
		"Ready Unknown":      {status: corev1.ConditionUnknown},
		"no Ready condition": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}}
			node := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}}}
			if tc.status != "" {
				pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: tc.status})
				node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: tc.status})
			}
			if got := PodReady(pod); got != tc.want {
				t.Errorf("PodReady = %v, want %v", got, tc.want)
			}
			if got := NodeReady(node); got != tc.want {
				t.Errorf("NodeReady = %v, want %v", got, tc.want)
			}
		})
	}
}

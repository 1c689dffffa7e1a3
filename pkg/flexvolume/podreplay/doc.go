// Package podreplay lets nodeplug hand pods to a controller again, through
// the event handlers the controller registered on its pod informer.
//
// Upstream's attach/detach controller looks up a pod's volume plugins when
// the pod is added or updated. A pod created just before its flexvolume
// driver was loaded is dropped and seen again only at the controller's
// periodic re-list (3 minutes). nodeplug builds that controller with a
// PodInformer from this package, and when a driver loads it replays the
// pods that use it as updates, so they are processed at once.
package podreplay

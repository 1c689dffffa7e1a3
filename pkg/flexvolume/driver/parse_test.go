package driver

import (
	"errors"
	"testing"
)

func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		`{"status":"Success"}`,
		`{"status":"Failure","message":"x"}`,
		`{"status":"Not supported"}`,
		`{"status":"Success","capabilities":{"attach":false}}`,
		`{"status":"Success","capabilities":null,"device":"/dev/sda","attached":true,"volumeNewSize":1}`,
		`  {"status":"Success"}  ` + "\n",
		`{"status":"Success"} trailing`,
		`[]`, `null`, `"Success"`, ``, `{`, "\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseResponse(data)
		if err != nil {
			if r != nil {
				t.Fatal("non-nil response with an error")
			}
			if !errors.Is(err, ErrInvalidOutput) {
				t.Fatalf("error %v does not wrap ErrInvalidOutput", err)
			}
			return
		}
		if r.Capabilities == nil {
			t.Fatal("nil capabilities")
		}
		switch r.Status {
		case StatusSuccess, StatusFailure, StatusNotSupported:
		default:
			t.Fatalf("accepted unknown status %q", r.Status)
		}
	})
}

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"success", `{"status":"Success"}`, false},
		{"surrounding whitespace", " \n{\"status\":\"Failure\"}\n", false},
		{"trailing garbage", `{"status":"Success"} x`, true},
		{"two objects", `{"status":"Success"}{"status":"Success"}`, true},
		{"array", `[]`, true},
		{"null", `null`, true},
		{"missing status", `{}`, true},
		{"wrong type", `{"status":"Success","attached":"yes"}`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseResponse([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

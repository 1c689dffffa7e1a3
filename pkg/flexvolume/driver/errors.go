package driver

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; test for them with errors.Is on any error a Driver returns.
var (
	// ErrNotSupported: the driver answered "Not supported". Callers fall back
	// to the in-tree default for the command. The answer is remembered for the
	// life of the Driver value, so the command is not run again.
	ErrNotSupported = errors.New("command not supported by the driver")
	// ErrFailure: the driver answered "Failure".
	ErrFailure = errors.New("driver reported failure")
	// ErrTimeout: the call did not finish in time and its process group was killed.
	ErrTimeout = errors.New("driver call timed out")
	// ErrOutputTooLarge: stdout or stderr exceeded MaxOutputBytes.
	ErrOutputTooLarge = errors.New("driver output exceeds the size limit")
	// ErrInvalidOutput: the output is not one JSON status object.
	ErrInvalidOutput = errors.New("driver output is not a valid status object")
	// ErrExecutableNotFound: there is no driver executable at the path.
	ErrExecutableNotFound = errors.New("driver executable not found")
	// ErrPermissionDenied: the executable exists but cannot be run.
	ErrPermissionDenied = errors.New("driver executable cannot be run (permission denied)")
	// ErrExitStatus: the driver exited non-zero. When its output says
	// "Success" the call still fails, because one of the two is a driver bug.
	ErrExitStatus = errors.New("driver exited with non-zero status")
)

// maxErrorOutput bounds how much driver output an error message quotes.
const maxErrorOutput = 512

// CallError describes a failed driver call. Unwrap returns one of the
// sentinel errors of this package, or the runner's error.
type CallError struct {
	// ExecPath is the driver executable.
	ExecPath string
	// Command is the command that failed.
	Command Command
	// Status and Message are the driver's answer, when there was one.
	Status  string
	Message string
	// ExitCode is the driver's exit status, or -1 when unknown.
	ExitCode int
	// Exit describes how the driver ended ("exit status 3",
	// "signal: killed"), when it ran.
	Exit string
	// Output is the start of the driver's output, for diagnosis.
	Output string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *CallError) Error() string {
	var b strings.Builder
	b.WriteString("flexvolume driver ")
	b.WriteString(e.ExecPath)
	b.WriteString(" command ")
	b.WriteString(string(e.Command))
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Exit != "" {
		b.WriteString(" (")
		b.WriteString(e.Exit)
		b.WriteString(")")
	}
	if e.Output != "" && e.Status == "" {
		fmt.Fprintf(&b, "; output: %q", e.Output)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// IsNotSupported reports whether err means the driver does not implement the
// command.
func IsNotSupported(err error) bool { return errors.Is(err, ErrNotSupported) }

// sample returns at most maxErrorOutput bytes of b, marked when cut.
func sample(b []byte) string {
	if len(b) <= maxErrorOutput {
		return string(b)
	}
	return string(b[:maxErrorOutput]) + "...(truncated)"
}

package bleveproc

import "time"

// SetCallTimeout makes every call's bound d for the rest of a test.
func SetCallTimeout(d time.Duration) func() {
	old := callTimeout
	callTimeout = func(string) time.Duration { return d }
	return func() { callTimeout = old }
}

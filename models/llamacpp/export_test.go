package llamacpp

import "testing"

// SetCPUFeatures makes FindRunners see a CPU with these features for the
// rest of t.
func SetCPUFeatures(t testing.TB, feats []string) {
	old := cpuFeatures
	cpuFeatures = func() []string { return feats }
	t.Cleanup(func() { cpuFeatures = old })
}

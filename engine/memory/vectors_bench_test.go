package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkVectorScan is the exact int8 scan alone (384 dims, top 24 = 6
// results × the candidate multiplier): the figure DefaultHNSWThreshold is
// chosen from.
func BenchmarkVectorScan(b *testing.B) {
	for _, n := range []int{10000, 50000, 100000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			s := newVectors(384)
			v := make([]float32, 384)
			for range n {
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
				normalize(v)
				s.add(v)
			}
			q := s.quantizeQuery(v)
			b.ResetTimer()
			for range b.N {
				s.scan(q, 24)
			}
			b.ReportMetric(float64(len(s.q)+4*len(s.scale)+len(s.live))/float64(n), "bytes/vector")
		})
	}
}

package hnsw

import (
	"io"

	"github.com/openclaw-edge/edge/engine/memory"
)

// Codec makes and reads graphs for the memory index (memory.Graph), with
// searches at breadth ef (0: the config's EfSearch).
func Codec(cfg Config, ef int) *memory.GraphCodec {
	if ef <= 0 {
		ef = New(cfg).cfg.EfSearch
	}
	return &memory.GraphCodec{
		New: func() memory.Graph { return adapter{New(cfg)} },
		Read: func(r io.Reader) (memory.Graph, error) {
			g, err := Read(r)
			if err != nil {
				return nil, err
			}
			return adapter{g}, nil
		},
		Ef: ef,
	}
}

// adapter gives *Graph the memory.Graph method set (its own types differ).
type adapter struct{ g *Graph }

func (a adapter) Add(id uint32, sim func(a, b uint32) float32) error { return a.g.Add(id, sim) }
func (a adapter) Delete(id uint32, sim func(a, b uint32) float32)    { a.g.Delete(id, sim) }
func (a adapter) Len() int                                           { return a.g.Len() }
func (a adapter) WriteTo(w io.Writer) (int64, error)                 { return a.g.WriteTo(w) }
func (a adapter) Search(q func(uint32) float32, k, ef int) []memory.Neighbor {
	ns := a.g.Search(q, k, ef)
	out := make([]memory.Neighbor, len(ns))
	for i, n := range ns {
		out[i] = memory.Neighbor{ID: n.ID, Score: n.Score}
	}
	return out
}

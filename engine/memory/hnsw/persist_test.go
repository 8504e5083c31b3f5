package hnsw

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"slices"
	"strings"
	"testing"
)

func encode(t testing.TB, g *Graph) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := g.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// smallGraph is the graph the corruption tests and the fuzz corpus use; it
// has levels above 0 and a deleted node, so every record kind occurs.
func smallGraph() (*Graph, dataset) {
	d := genData(21, 60, 8, 4)
	g := New(Config{M: 4, EfConstruction: 20, Seed: 8})
	for i := range d {
		if err := g.Add(uint32(i), d.sim); err != nil {
			panic(err)
		}
	}
	g.Delete(17, d.sim)
	return g, d
}

func TestRoundTrip(t *testing.T) {
	all := genData(20, 2200, 32, 20)
	d, queries := all[:2000], all[2000:]
	g := build(d[:1900], Config{M: 8, Seed: 4})
	for i := 0; i < 1900; i += 10 {
		g.Delete(uint32(i), d.sim)
	}
	b := encode(t, g)
	h, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !sameGraph(g, h) {
		t.Fatal("read graph differs from written graph")
	}
	for _, q := range queries {
		if a, b := g.Search(d.query(q), 10, 0), h.Search(d.query(q), 10, 0); !slices.Equal(a, b) {
			t.Fatalf("search differs after round trip: %v vs %v", a, b)
		}
	}
	// The level generator's state travels too: adding the same nodes to
	// both gives the same graph.
	for i := 1900; i < 2000; i++ {
		if err := g.Add(uint32(i), d.sim); err != nil {
			t.Fatal(err)
		}
		if err := h.Add(uint32(i), d.sim); err != nil {
			t.Fatal(err)
		}
	}
	if !sameGraph(g, h) {
		t.Fatal("graphs differ after the same Adds")
	}
	// Read takes exactly the graph's bytes from a longer stream.
	r := io.MultiReader(bytes.NewReader(b), strings.NewReader("tail"))
	if _, err := Read(r); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "tail" {
		t.Fatalf("after Read the stream holds %q", rest)
	}
	// Empty graph.
	e, err := Read(bytes.NewReader(encode(t, New(Config{}))))
	if err != nil || e.Len() != 0 || len(e.Search(d.query(q0(queries)), 5, 0)) != 0 {
		t.Fatalf("empty graph round trip: %v %v", e, err)
	}
}

func q0(d dataset) []float32 { return d[0] }

func TestReadTruncated(t *testing.T) {
	g, _ := smallGraph()
	b := encode(t, g)
	for n := range len(b) {
		_, err := Read(bytes.NewReader(b[:n]))
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: err = %v", n, len(b), err)
		}
	}
}

func TestReadBitFlips(t *testing.T) {
	g, _ := smallGraph()
	b := encode(t, g)
	c := make([]byte, len(b))
	for i := range b {
		for bit := range 8 {
			copy(c, b)
			c[i] ^= 1 << bit
			if _, err := Read(bytes.NewReader(c)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip byte %d bit %d: err = %v", i, bit, err)
			}
			// With the checksum fixed up the structure checks must catch
			// it or accept a graph that still holds together.
			fixCRC(c)
			if h, err := Read(bytes.NewReader(c)); err == nil {
				checkInvariants(t, h)
			} else if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip byte %d bit %d, fixed checksum: err = %v", i, bit, err)
			}
		}
	}
}

// fixCRC rewrites the trailing checksum of b to match its content.
func fixCRC(b []byte) {
	if len(b) < 4 {
		return
	}
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli()))
}

// TestReadErrors: specific damage, checksum fixed, gives a message naming it.
func TestReadErrors(t *testing.T) {
	g, _ := smallGraph()
	good := encode(t, g)
	le := binary.LittleEndian
	// Offsets in the body of smallGraph's file.
	pcgLen := int(le.Uint32(good[headerLen+20:]))
	slotsOff := headerLen + 24 + pcgLen
	firstNode := slotsOff + 16
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }, "bad magic"},
		{"version", func(b []byte) []byte { le.PutUint32(b[8:], 2); return b }, "unsupported version 2"},
		{"body length huge", func(b []byte) []byte { le.PutUint64(b[12:], 1<<60); return b }, "truncated"},
		{"checksum", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "checksum mismatch"},
		{"M zero", func(b []byte) []byte { le.PutUint32(b[headerLen:], 0); return fixed(b) }, "M = 0 out of range"},
		{"slots huge", func(b []byte) []byte { le.PutUint32(b[slotsOff:], 1<<30); return fixed(b) }, "slot count"},
		{"count huge", func(b []byte) []byte { le.PutUint32(b[slotsOff+4:], 1<<30); return fixed(b) }, "node count"},
		{"top level", func(b []byte) []byte { le.PutUint32(b[slotsOff+12:], 40); return fixed(b) }, "top level 40"},
		{"entry", func(b []byte) []byte { le.PutUint32(b[slotsOff+8:], 17); return fixed(b) }, "entry point 17 is not a node"},
		{"id order", func(b []byte) []byte { le.PutUint32(b[firstNode:], 59); return fixed(b) }, "not above the previous id"},
		{"neighbour missing", func(b []byte) []byte {
			// First neighbour of node 0 on layer 0 becomes the deleted 17.
			le.PutUint32(b[firstNode+9:], 17)
			return fixed(b)
		}, "neighbour 17 is not a node"},
		{"neighbour count", func(b []byte) []byte { le.PutUint32(b[firstNode+5:], 1000); return fixed(b) }, "neighbours, at most"},
		{"trailing", func(b []byte) []byte {
			b = slices.Insert(b, len(b)-4, 0, 0, 0, 0)
			le.PutUint64(b[12:], le.Uint64(b[12:])+4)
			return fixed(b)
		}, "bytes after the last node record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.edit(slices.Clone(good))
			_, err := Read(bytes.NewReader(b))
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func fixed(b []byte) []byte { fixCRC(b); return b }

func TestWriteSparseIDs(t *testing.T) {
	d := genData(1, 2, 4, 0)
	g := New(Config{})
	big := make(dataset, 100000)
	big[0], big[99999] = d[0], d[1]
	g.Add(0, big.sim)
	g.Add(99999, big.sim)
	if _, err := g.WriteTo(io.Discard); err == nil {
		t.Fatal("WriteTo accepted 100000 slots for 2 nodes")
	}
	g.Delete(99999, big.sim)
	g.Add(5, func(a, b uint32) float32 { return 0 })
	if _, err := g.WriteTo(io.Discard); err == nil {
		t.Fatal("WriteTo accepted 100000 slots for 2 nodes after delete")
	}
}

type errWriter struct{ n int }

func (w *errWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		n := w.n
		w.n = 0
		return n, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	g, _ := smallGraph()
	if _, err := g.WriteTo(&errWriter{n: 100}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzRead(f *testing.F) {
	g, _ := smallGraph()
	var buf bytes.Buffer
	g.WriteTo(&buf)
	f.Add(buf.Bytes())
	buf.Reset()
	New(Config{}).WriteTo(&buf)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		// As is (nearly always a checksum error), then with the checksum
		// fixed so the structure checks see the damage.
		for _, in := range [][]byte{b, fixed(slices.Clone(b))} {
			h, err := Read(bytes.NewReader(in))
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error not wrapping ErrCorrupt: %v", err)
				}
				continue
			}
			checkInvariants(t, h)
			// A graph Read accepts is usable and writes back the same bytes.
			out := encode(t, h)
			if !bytes.Equal(out, in[:len(out)]) {
				t.Fatal("accepted input does not round trip")
			}
			sim := func(a, b uint32) float32 { return -float32(a ^ b) }
			h.Search(func(x uint32) float32 { return float32(x) }, 5, 0)
			if h.Len() > 0 {
				h.Delete(h.entry, sim)
				checkInvariants(t, h)
			}
			if id := uint32(len(h.nodes)); id <= MaxID {
				if err := h.Add(id, sim); err != nil {
					t.Fatal(err)
				}
			}
			checkInvariants(t, h)
		}
	})
}

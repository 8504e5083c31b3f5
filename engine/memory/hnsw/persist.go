package hnsw

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
)

// File format, version 1, little endian:
//
//	magic    [8]byte "HNSWEDGE"
//	version  uint32
//	bodyLen  uint64  bytes from M up to (not including) the checksum
//	M, EfConstruction, EfSearch uint32
//	Seed     uint64
//	pcgLen   uint32, pcg [pcgLen]byte   level generator state (rand.PCG.MarshalBinary)
//	slots    uint32  one more than the largest id the graph has room for
//	count    uint32  number of nodes
//	entry    uint32, top uint32          entry point and its level (0, 0 when empty)
//	count node records in increasing id order:
//	    id uint32, level uint8, then level+1 times: n uint32, n neighbour ids uint32
//	crc      uint32  CRC-32C of everything before it
//
// bodyLen lets Read take exactly the graph's bytes from a longer stream.
const (
	magic         = "HNSWEDGE"
	formatVersion = 1
	headerLen     = 8 + 4 + 8
	maxParam      = 1 << 20 // bound for M and ef in a file
	// Read allows at most this many id slots per node (plus slotSlack), so
	// a small file cannot make it allocate a huge slot table. WriteTo
	// refuses graphs whose ids are sparser than that.
	slotsPerNode = 16
	slotSlack    = 1 << 16
)

// ErrCorrupt is wrapped by every error Read returns for malformed input.
var ErrCorrupt = errors.New("hnsw: corrupt graph file")

// castagnoli is built on first use: crc32's Castagnoli tables are 9 KB,
// and every start of the gateway would build them (appliance/inits_test.go).
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

func (g *Graph) pcgState() []byte {
	b, err := g.pcg.MarshalBinary()
	if err != nil {
		panic(err) // rand.PCG.MarshalBinary never fails
	}
	return b
}

// WriteTo writes the graph in the binary format above. It fails for a graph
// whose id space is more than 16 slots per node (plus 65536): compact the ids
// and rebuild instead.
func (g *Graph) WriteTo(w io.Writer) (int64, error) {
	if len(g.nodes) > slotsPerNode*g.count+slotSlack {
		return 0, fmt.Errorf("hnsw: write: %d id slots for %d nodes: ids too sparse to store", len(g.nodes), g.count)
	}
	pcg := g.pcgState()
	body := 4*3 + 8 + 4 + len(pcg) + 4*4
	for _, links := range g.nodes {
		if links == nil {
			continue
		}
		body += 4 + 1
		for _, l := range links {
			body += 4 + 4*len(l)
		}
	}

	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	crc := crc32.New(castagnoli())
	out := io.MultiWriter(bw, crc)
	var buf [8]byte
	le := binary.LittleEndian
	// Writes to out only fail when bw does; bufio keeps the first error and
	// Flush reports it, so the per-call errors are not checked.
	u32 := func(v uint32) { le.PutUint32(buf[:4], v); out.Write(buf[:4]) }
	u64 := func(v uint64) { le.PutUint64(buf[:], v); out.Write(buf[:]) }

	out.Write([]byte(magic))
	u32(formatVersion)
	u64(uint64(body))
	u32(uint32(g.cfg.M))
	u32(uint32(g.cfg.EfConstruction))
	u32(uint32(g.cfg.EfSearch))
	u64(g.cfg.Seed)
	u32(uint32(len(pcg)))
	out.Write(pcg)
	u32(uint32(len(g.nodes)))
	u32(uint32(g.count))
	top := max(g.top, 0)
	u32(g.entry)
	u32(uint32(top))
	for id, links := range g.nodes {
		if links == nil {
			continue
		}
		u32(uint32(id))
		out.Write([]byte{byte(len(links) - 1)})
		for _, l := range links {
			u32(uint32(len(l)))
			for _, x := range l {
				u32(x)
			}
		}
	}
	le.PutUint32(buf[:4], crc.Sum32())
	bw.Write(buf[:4])
	err := bw.Flush()
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Read reads a graph written by WriteTo, taking exactly its bytes from r.
// Everything is checked — magic, version, lengths against the bytes present,
// the checksum, ids, levels and that every neighbour is a node of a high
// enough level — and malformed input gives an error wrapping ErrCorrupt that
// says what is wrong and at which byte offset. Memory use is bounded by a
// small multiple of the bytes actually read.
func Read(r io.Reader) (*Graph, error) {
	var hdr [headerLen]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, corrupt("truncated header: %d of %d bytes", n, headerLen)
		}
		return nil, fmt.Errorf("hnsw: read header: %w", err)
	}
	if string(hdr[:8]) != magic {
		return nil, corrupt("bad magic %q at offset 0", hdr[:8])
	}
	le := binary.LittleEndian
	if v := le.Uint32(hdr[8:]); v != formatVersion {
		return nil, corrupt("unsupported version %d at offset 8 (want %d)", v, formatVersion)
	}
	bodyLen := le.Uint64(hdr[12:])
	// CopyN grows the buffer only as bytes arrive, so a huge bodyLen in a
	// short file costs nothing.
	var buf bytes.Buffer
	want := int64(min(bodyLen, 1<<62)) + 4
	n, err := io.CopyN(&buf, r, want)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, corrupt("truncated: body and checksum need %d bytes after offset %d, got %d", want, headerLen, n)
		}
		return nil, fmt.Errorf("hnsw: read body: %w", err)
	}
	data := buf.Bytes()
	body := data[:len(data)-4]
	crc := crc32.Update(crc32.Checksum(hdr[:], castagnoli()), castagnoli(), body)
	if got := le.Uint32(data[len(data)-4:]); got != crc {
		return nil, corrupt("checksum mismatch at offset %d: file says %08x, content gives %08x", headerLen+len(body), got, crc)
	}
	return parseBody(body)
}

// reader walks the body, tracking the file offset for error messages.
type reader struct {
	b   []byte
	off int // offset into b
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = corrupt("offset %d: %s", headerLen+r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.fail("%s needs %d bytes, %d left", what, n, len(r.b)-r.off)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) u32(what string) uint32 {
	if p := r.take(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if p := r.take(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *reader) left() int { return len(r.b) - r.off }

func parseBody(body []byte) (*Graph, error) {
	r := &reader{b: body}
	var cfg Config
	params := [3]*int{&cfg.M, &cfg.EfConstruction, &cfg.EfSearch}
	for i, name := range [3]string{"M", "EfConstruction", "EfSearch"} {
		v := r.u32(name)
		if r.err == nil && (v < 1 || v > maxParam || (i == 0 && v < 2)) {
			r.fail("%s = %d out of range", name, v)
		}
		*params[i] = int(v)
	}
	cfg.Seed = r.u64("seed")
	pcgLen := r.u32("generator state length")
	if r.err == nil && pcgLen > 64 {
		r.fail("generator state length %d out of range", pcgLen)
	}
	pcgOff := r.off
	pcgState := r.take(int(pcgLen), "generator state")
	slots := r.u32("slot count")
	count := r.u32("node count")
	entry := r.u32("entry point")
	top := r.u32("top level")
	if r.err != nil {
		return nil, r.err
	}
	g := New(cfg)
	if err := g.pcg.UnmarshalBinary(pcgState); err != nil {
		r.off = pcgOff
		r.fail("generator state: %v", err)
		return nil, r.err
	}
	// A node record is at least id, level and one list length: 9 bytes.
	if uint64(count)*9 > uint64(r.left()) {
		r.fail("node count %d needs at least %d bytes, %d left", count, uint64(count)*9, r.left())
		return nil, r.err
	}
	if slots > MaxID+1 || uint64(slots) > slotsPerNode*uint64(count)+slotSlack {
		r.fail("slot count %d too large for %d nodes", slots, count)
		return nil, r.err
	}
	if count > slots {
		r.fail("node count %d above slot count %d", count, slots)
		return nil, r.err
	}
	if top > maxLevel {
		r.fail("top level %d above %d", top, maxLevel)
		return nil, r.err
	}
	g.nodes = make([][][]uint32, slots)
	g.count = int(count)
	next := uint32(0) // ids must increase, so none repeats
	for i := range count {
		start := r.off
		id := r.u32("node id")
		lvl := r.take(1, "node level")
		if r.err != nil {
			return nil, r.err
		}
		level := uint32(lvl[0])
		switch {
		case id >= slots:
			r.off = start
			r.fail("node %d: id %d not below slot count %d", i, id, slots)
		case id < next:
			r.off = start
			r.fail("node %d: id %d not above the previous id", i, id)
		case level > top:
			r.off = start + 4
			r.fail("node %d (id %d): level %d above top level %d", i, id, level, top)
		}
		if r.err != nil {
			return nil, r.err
		}
		next = id + 1
		links := make([][]uint32, level+1)
		for l := range links {
			n := r.u32("neighbour count")
			if r.err == nil && int(n) > g.maxLinks(l) {
				r.off -= 4
				r.fail("node %d (id %d) layer %d: %d neighbours, at most %d allowed", i, id, l, n, g.maxLinks(l))
			}
			raw := r.take(4*int(n), "neighbour list")
			if r.err != nil {
				return nil, r.err
			}
			lst := make([]uint32, n)
			for j := range lst {
				lst[j] = binary.LittleEndian.Uint32(raw[4*j:])
			}
			links[l] = lst
		}
		g.nodes[id] = links
	}
	if r.left() != 0 {
		r.fail("%d bytes after the last node record", r.left())
		return nil, r.err
	}
	// Neighbours can only be checked once every node is known.
	for id, links := range g.nodes {
		for l, lst := range links {
			for j, x := range lst {
				switch {
				case slices.Contains(lst[:j], x):
					return nil, corrupt("node %d layer %d: neighbour %d listed twice", id, l, x)
				case x == uint32(id):
					return nil, corrupt("node %d layer %d links to itself", id, l)
				case int(x) >= len(g.nodes) || g.nodes[x] == nil:
					return nil, corrupt("node %d layer %d: neighbour %d is not a node", id, l, x)
				case len(g.nodes[x]) <= l:
					return nil, corrupt("node %d layer %d: neighbour %d has level %d only", id, l, x, len(g.nodes[x])-1)
				}
			}
		}
	}
	if count == 0 {
		if entry != 0 || top != 0 {
			return nil, corrupt("empty graph with entry %d top %d", entry, top)
		}
		return g, nil
	}
	if int(entry) >= len(g.nodes) || g.nodes[entry] == nil {
		return nil, corrupt("entry point %d is not a node", entry)
	}
	if got := len(g.nodes[entry]) - 1; got != int(top) {
		return nil, corrupt("entry point %d has level %d, top level is %d", entry, got, top)
	}
	g.entry, g.top = entry, int(top)
	return g, nil
}

// Ensure the PCG type keeps the Marshal/Unmarshal pair this format relies on.
var _ interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
} = (*rand.PCG)(nil)

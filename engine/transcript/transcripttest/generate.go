// Package transcripttest writes large, realistic OpenClaw version 3
// transcripts for import tests and benchmarks: user and assistant messages
// with text, thinking and tool calls, tool results, usage with costs, and
// the occasional custom entry, chained by parentId like pi writes them.
package transcripttest

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// Generate writes a transcript with session id id of at least size bytes
// to w and returns the number of entries after the header. Its output is
// the same for the same arguments.
func Generate(w io.Writer, id string, size int64) (int, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &counter{w: bw}
	rnd := rand.New(rand.NewPCG(1, uint64(size)))
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	ts := func(i int) (string, int64) {
		t := t0.Add(time.Duration(i) * 1500 * time.Millisecond)
		return t.Format("2006-01-02T15:04:05.000Z"), t.UnixMilli()
	}
	fmt.Fprintf(cw, `{"type":"session","version":3,"id":%q,"timestamp":"2026-03-01T08:00:00.000Z","cwd":"/home/pi/.openclaw/workspace"}`+"\n", id)
	n := 0
	parent := "null"
	line := func(format string, args ...any) {
		n++
		eid := fmt.Sprintf("%08x", n)
		iso, _ := ts(n)
		fmt.Fprintf(cw, `{"type":%s,"id":%q,"parentId":%s,"timestamp":%q,`, args[0], eid, parent, iso)
		fmt.Fprintf(cw, format, args[1:]...)
		cw.Write([]byte("}\n"))
		parent = `"` + eid + `"`
	}
	for turn := 0; cw.n < size; turn++ {
		_, ms := ts(n + 1)
		line(`"message":{"role":"user","content":[{"type":"text","text":%q}],"timestamp":%d}`, `"message"`, prose(rnd, 20+rnd.IntN(200)), ms)
		calls := rnd.IntN(3)
		for c := range calls {
			_, ms = ts(n + 1)
			callID := fmt.Sprintf("toolu_%06d_%d", turn, c)
			tool, args := toolCall(rnd)
			line(`"message":{"role":"assistant","content":[{"type":"thinking","thinking":%q,"thinkingSignature":"sig-%d"},{"type":"text","text":%q},{"type":"toolCall","id":%q,"name":%q,"arguments":%s}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d,"cost":{"input":0.0004,"output":0.0005,"cacheRead":0,"cacheWrite":0,"total":0.0009}},"stopReason":"toolUse","timestamp":%d}`,
				`"message"`, prose(rnd, 30+rnd.IntN(60)), turn, prose(rnd, 10+rnd.IntN(30)), callID, tool, args, 1000+rnd.IntN(9000), 20+rnd.IntN(300), rnd.IntN(8000), 2000+rnd.IntN(9000), ms)
			_, ms = ts(n + 1)
			line(`"message":{"role":"toolResult","toolCallId":%q,"toolName":%q,"content":[{"type":"text","text":%q}],"details":{"exitCode":0,"truncated":false},"isError":false,"timestamp":%d}`,
				`"message"`, callID, tool, output(rnd, 200+rnd.IntN(3000)), ms)
		}
		_, ms = ts(n + 1)
		line(`"message":{"role":"assistant","content":[{"type":"text","text":%q,"textSignature":"t%d"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop","timestamp":%d,"responseId":"r-%d"}`,
			`"message"`, prose(rnd, 40+rnd.IntN(400)), turn, 1000+rnd.IntN(9000), 20+rnd.IntN(600), rnd.IntN(8000), 2000+rnd.IntN(9000), ms, turn)
		if turn%25 == 24 {
			line(`"customType":"openclaw.memory-flush","data":{"at":%d,"compactionCount":%d}`, `"custom"`, ms, turn/25)
		}
	}
	if err := bw.Flush(); err != nil {
		return n, err
	}
	return n, cw.err
}

type counter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *counter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

var words = strings.Fields(`the a file notes config gateway session model reply tool read write edit
	search memory branch commit test build error line path value check run start stop list
	because when then with from into over under about after before while, please could you
	é über naïve 東京 🙂 "quoted" back\slash tab	done.`)

func prose(rnd *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rnd.IntN(len(words))])
	}
	return b.String()
}

func output(rnd *rand.Rand, size int) string {
	var b strings.Builder
	for b.Len() < size {
		fmt.Fprintf(&b, "%4d | %s\n", rnd.IntN(999), prose(rnd, 4+rnd.IntN(12)))
	}
	return b.String()
}

func toolCall(rnd *rand.Rand) (name, args string) {
	switch rnd.IntN(4) {
	case 0:
		return "read", fmt.Sprintf(`{"path":"src/file_%d.go"}`, rnd.IntN(500))
	case 1:
		return "exec", fmt.Sprintf(`{"command":"go test ./pkg%d/... -run Test%d","timeout":120}`, rnd.IntN(40), rnd.IntN(90))
	case 2:
		return "edit", fmt.Sprintf(`{"path":"notes/%d.md","oldText":"a","newText":"b \"x\"","replaceAll":false}`, rnd.IntN(90))
	}
	return "memory_search", fmt.Sprintf(`{"query":"what did we decide about %d","maxResults":5}`, rnd.IntN(1000))
}

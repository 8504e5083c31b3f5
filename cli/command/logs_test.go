package command

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// fakeLog is the fake gateway's log.
var fakeLog = []string{"time=1 level=INFO msg=one", "time=2 level=WARN msg=two", "time=3 level=INFO msg=\"gateway ready\""}

func init() {
	fakeRoutes["GET "+api.PathLogs] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("lines"))
		if err != nil {
			fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "bad lines"})
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, l := range fakeLog[max(len(fakeLog)-n, 0):] {
			w.Write([]byte(l + "\n"))
		}
		if r.URL.Query().Get("follow") != "1" {
			return
		}
		w.Write([]byte("time=4 level=INFO msg=later\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // until the client goes away
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLogs(t *testing.T) {
	g, err := startFakeGateway()
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	logs := func(ctx context.Context, stdout *lockedBuffer, args ...string) (int, string) {
		var stderr bytes.Buffer
		code := run(ctx, append([]string{"--socket", g.socket, "logs"}, args...), strings.NewReader(""), stdout, &stderr)
		return code, stderr.String()
	}
	var out lockedBuffer
	if code, errOut := logs(context.Background(), &out, "-n", "2"); code != 0 || out.String() != fakeLog[1]+"\n"+fakeLog[2]+"\n" {
		t.Errorf("-n 2: exit %d\n%s\n%s", code, out.String(), errOut)
	}
	out = lockedBuffer{}
	if code, errOut := logs(context.Background(), &out, "-n", "1", "--json"); code != 0 || out.String() != `{"line":"time=3 level=INFO msg=\"gateway ready\""}`+"\n" {
		t.Errorf("--json: exit %d\n%s\n%s", code, out.String(), errOut)
	}
	out = lockedBuffer{}
	if code, errOut := logs(context.Background(), &out, "-n", "-1"); code != 2 || !strings.Contains(errOut, "want 0 to") {
		t.Errorf("-n -1: exit %d\n%s", code, errOut)
	}

	// -f prints new lines until Ctrl-C, then exits 0.
	out = lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { code, _ := logs(ctx, &out, "-f", "-n", "1"); done <- code }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "msg=later") {
		if time.Now().After(deadline) {
			t.Fatalf("-f printed %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("-f ended with exit %d", code)
	}

	// A gateway that is down: exit 1, and --json says so on stdout.
	out = lockedBuffer{}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"--socket", g.dir + "/down.sock", "logs", "--json"}, strings.NewReader(""), &out, &stderr)
	if code != 1 || !strings.Contains(out.String(), `"code": "gateway_down"`) {
		t.Errorf("down: exit %d\n%s", code, out.String())
	}
}

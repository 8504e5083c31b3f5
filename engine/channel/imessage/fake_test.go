package imessage

// The fake `imsg rpc` is imsgtest's (shared with the appliance's
// end-to-end tests): the test binary becomes it when re-executed with
// imsgtest.EnvDir set. This file adapts it to the names these tests use.

import (
	"os"
	"testing"

	"github.com/openclaw-edge/edge/engine/channel/imessage/imsgtest"
)

func TestMain(m *testing.M) {
	imsgtest.Main()
	os.Exit(m.Run())
}

type fakeConfig = imsgtest.Config

// uuidRE is the attempt_id shape send.tracked accepts.
var uuidRE = imsgtest.UUIDPattern

// fakeIMsg is one fake imsg installation: its directory (database,
// records) and a wrapper script named imsg in bin.
type fakeIMsg struct {
	*imsgtest.Fake
	dir     string
	bin     string
	wrapper string
}

func newFakeIMsg(t *testing.T, cfg fakeConfig) *fakeIMsg {
	t.Helper()
	return wrapFake(imsgtest.New(t, cfg))
}

func newFakeIMsgIn(t *testing.T, dir string, cfg fakeConfig) *fakeIMsg {
	t.Helper()
	return wrapFake(imsgtest.NewIn(t, dir, cfg))
}

func wrapFake(f *imsgtest.Fake) *fakeIMsg {
	return &fakeIMsg{Fake: f, dir: f.Dir, bin: f.Bin, wrapper: f.Path}
}

// add appends messages to the fake Messages database.
func (f *fakeIMsg) add(msgs ...map[string]any) { f.Add(msgs...) }

func (f *fakeIMsg) sends() []map[string]any { return f.Sends() }

// requests returns the params of every request of method.
func (f *fakeIMsg) requests(method string) []map[string]any { return f.Requests(method) }

func (f *fakeIMsg) pid() int { return f.PID() }

// fakeError is e as the fake's config takes it.
func fakeError(e rpcError) *imsgtest.RPCError {
	return &imsgtest.RPCError{Code: e.Code, Message: e.Message, Data: e.Data}
}

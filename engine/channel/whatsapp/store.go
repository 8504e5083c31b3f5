package whatsapp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/store/sqlstore"
	waLog "go.mau.fi/whatsmeow/util/log"
	"google.golang.org/protobuf/proto"

	// The pure-Go SQLite driver, registered as "sqlite": no cgo, so the
	// gateway still cross-compiles (docs/design.md §8).
	_ "modernc.org/sqlite"
)

// storeDSN is the modernc DSN of the device store. Foreign keys are
// required by whatsmeow's schema (Upgrade refuses to run without them);
// WAL lets a reader (Status, Login's check) run beside the writer; the
// busy timeout turns the short write contention between connections of
// the pool into waits instead of SQLITE_BUSY errors; immediate
// transactions take the write lock up front, so two transactions never
// deadlock upgrading read locks.
func storeDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Set("_txlock", "immediate")
	return "file:" + filepath.ToSlash(path) + "?" + q.Encode()
}

// openStore opens (creating it 0600 if needed) and upgrades the SQLite
// device store. dbutil recognises the dialect by the name's "sqlite"
// prefix, so modernc's driver name works as is; no registration under
// "sqlite3" is needed.
func openStore(ctx context.Context, path string, log waLog.Logger) (*sqlstore.Container, error) {
	if path == "" {
		return nil, errors.New("no device store path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("device store directory: %w", err)
	}
	// Create the file ourselves so it is 0600 from its first byte: it holds
	// the account's identity keys.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("device store: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("device store: %w", err)
	}
	db, err := sql.Open("sqlite", storeDSN(path))
	if err != nil {
		return nil, fmt.Errorf("device store: %w", err)
	}
	c := sqlstore.NewWithDB(db, "sqlite", log)
	if err := c.Upgrade(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("device store %s: upgrade: %w", path, err), db.Close())
	}
	return c, nil
}

// Pinned is the WhatsApp Web version this build of whatsmeow announces
// when web.whatsapp.com cannot be asked for the current one.
var Pinned = store.GetWAVersion()

// versionFetchTimeout bounds GetLatestVersion at connect: a slow
// web.whatsapp.com must not hold up the link; the pinned version is
// usually still accepted.
var versionFetchTimeout = 10 * time.Second

// globalMu guards whatsmeow's package-level client payload (the version,
// DeviceProps): several accounts may connect at once.
var globalMu sync.Mutex

var setupOnce sync.Once

// setupDeviceProps names the linked device on the phone ("Linked devices"
// shows the OS name) once per process.
func setupDeviceProps() {
	setupOnce.Do(func() {
		globalMu.Lock()
		defer globalMu.Unlock()
		store.DeviceProps.Os = proto.String("OpenClaw Edge")
	})
}

// updateVersion asks web.whatsapp.com for the current client revision and
// announces it; on failure it keeps the last one set (the pinned value at
// first). It reports the version in use and where it came from.
func updateVersion(ctx context.Context, hc *http.Client) (store.WAVersionContainer, string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionFetchTimeout)
	defer cancel()
	v, err := whatsmeow.GetLatestVersion(ctx, hc)
	globalMu.Lock()
	defer globalMu.Unlock()
	if err != nil || v == nil || v.IsZero() {
		if err == nil {
			err = errors.New("empty version")
		}
		return store.GetWAVersion(), "pinned", fmt.Errorf("fetch WhatsApp Web version: %w", err)
	}
	if *v == store.GetWAVersion() {
		// Unchanged: leave the globals alone, another account's client
		// may be reading them in its handshake right now.
		return *v, "web.whatsapp.com", nil
	}
	store.SetWAVersion(*v)
	// SetWAVersion changes the build hash but not the version in the
	// login payload (BaseClientPayload copied the pinned one at init), so
	// set that too, or the server still sees the old version.
	store.BaseClientPayload.UserAgent.AppVersion = v.ProtoAppVersion()
	return *v, "web.whatsapp.com", nil
}

// slogLogger adapts whatsmeow's logger to slog. whatsmeow's Info level is
// chatty (every connect, every prekey count), so it is logged at Debug;
// warnings and errors keep their level.
type slogLogger struct {
	l *slog.Logger
}

func (s slogLogger) Warnf(msg string, args ...any) { s.l.Warn(fmt.Sprintf(msg, args...)) }
func (s slogLogger) Errorf(msg string, args ...any) {
	s.l.Error(fmt.Sprintf(msg, args...))
}
func (s slogLogger) Infof(msg string, args ...any) { s.l.Debug(fmt.Sprintf(msg, args...)) }
func (s slogLogger) Debugf(msg string, args ...any) {
	if s.l.Enabled(context.Background(), slog.LevelDebug-4) {
		s.l.Log(context.Background(), slog.LevelDebug-4, fmt.Sprintf(msg, args...))
	}
}
func (s slogLogger) Sub(module string) waLog.Logger {
	return slogLogger{s.l.With("module", module)}
}

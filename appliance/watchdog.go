package main

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"go.etcd.io/bbolt"
)

// watchdog pings systemd's watchdog (WatchdogSec=) at half its interval,
// but only while alive says the main loop works: a gateway that is stuck
// (a hung store, a dead control API) stops pinging, and systemd restarts it
// instead of keeping a zombie that answers nobody.
func watchdog(log *slog.Logger, alive func() error) (stop func()) {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil || interval == 0 {
		return func() {}
	}
	t := time.NewTicker(interval / 2)
	done := make(chan struct{})
	go watchdogLoop(log, t.C, done, alive, func() error {
		_, err := daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		return err
	})
	return func() { t.Stop(); close(done) }
}

// watchdogLoop probes and pings on each tick until done. The probe runs on
// this goroutine: one that hangs stops the pings, which is the point.
func watchdogLoop(log *slog.Logger, tick <-chan time.Time, done <-chan struct{}, alive, ping func() error) {
	failing := false
	for {
		select {
		case <-done:
			return
		case <-tick:
		}
		if err := alive(); err != nil {
			if !failing {
				log.Error("the gateway is not responding; no watchdog ping, so systemd will restart it if this lasts", "err", err)
			}
			failing = true
			continue
		}
		if failing {
			log.Info("the gateway responds again; watchdog pings resume")
		}
		failing = false
		if err := ping(); err != nil {
			log.Warn("watchdog ping failed", "err", err)
		}
	}
}

// liveness is the watchdog's probe of the main loop: the control API's
// serve loop is still running and the store can begin a read transaction.
func liveness(serving *atomic.Bool, db *bbolt.DB) func() error {
	return func() error {
		if !serving.Load() {
			return errors.New("the control API stopped serving")
		}
		if err := db.View(func(*bbolt.Tx) error { return nil }); err != nil {
			return errors.New("the state database cannot begin a read: " + err.Error())
		}
		return nil
	}
}

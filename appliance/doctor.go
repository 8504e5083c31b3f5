package main

import (
	"errors"
	"strings"

	"github.com/openclaw-edge/edge/engine/config"
	"github.com/openclaw-edge/edge/engine/doctor"
	"github.com/openclaw-edge/edge/engine/localapi"
	"github.com/openclaw-edge/edge/engine/memory/bleveproc"
	"github.com/openclaw-edge/edge/models/catalog"
)

// doctorConfig gives GET /v1/doctor what only the wiring knows: the local
// model files (the registry's and those the config lists with a path) and
// gateway.bind, session.dmScope's warnings, and the LAN listener's state (*lanSide, set once it is
// built).
func doctorConfig(cfg *config.Config, registry *catalog.Registry, lanSide **lanAPI) localapi.DoctorConfig {
	return localapi.DoctorConfig{
		Bind: cfg.Gateway.Bind,
		SharedMain: func() []string {
			var out []string
			for _, w := range cfg.SharedMainWarnings() {
				out = append(out, w.Reason)
			}
			return out
		},
		LAN: func() (string, error) {
			l := *lanSide
			if l == nil {
				return "", errors.New("not started yet")
			}
			st := l.snapshot()
			if len(st.Addrs) == 0 {
				return "", errors.New(st.Error)
			}
			return strings.Join(st.Addrs, " "), nil
		},
		Helpers: func() []doctor.Helper { return helperPrograms(cfg) },
		Models: func() []doctor.ModelFile {
			var out []doctor.ModelFile
			for _, e := range registry.List() {
				out = append(out, doctor.ModelFile{Name: e.Name, Path: e.Path})
			}
			for id, p := range cfg.Models.Providers {
				if p.API != config.APILocal {
					continue
				}
				for _, m := range p.Models {
					if m.Path != "" {
						out = append(out, doctor.ModelFile{Name: id + "/" + m.ID, Path: m.Path})
					}
				}
			}
			return out
		},
	}
}

// helperPrograms are the programs this configuration needs beside the
// gateway, found where the gateway will look for them.
func helperPrograms(cfg *config.Config) []doctor.Helper {
	var out []doctor.Helper
	for _, id := range cfg.AgentIDs() {
		if ra, _ := cfg.Agent(id); ra.MemorySearch.IsEnabled() {
			p, err := bleveproc.Binary()
			out = append(out, doctor.Helper{Name: bleveproc.BinaryName, For: "memory search", Path: p, Err: err})
			break
		}
	}
	if _, ok := cfg.Channels["whatsapp"]; ok {
		if _, ok := channelKinds["whatsapp"]; ok {
			p, err := whatsappBinary()
			out = append(out, doctor.Helper{Name: "openclaw-whatsapp", For: "channels.whatsapp", Path: p, Err: err})
		}
	}
	return out
}

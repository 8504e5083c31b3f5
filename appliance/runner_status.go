package main

import (
	"strings"

	"github.com/openclaw-edge/edge/appliance/modelset"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// runnerStatus fills in which openclaw-runner build local models use on
// this CPU: the build the next start takes (or the one running), its CPU
// variant, the CPU's features and the best variant they allow, and every
// build found with its state.
func runnerStatus(st *api.Status, pool *llamacpp.Pool) {
	rep, err := pool.Report()
	st.CPUFeatures, st.BestVariant = rep.CPUFeatures, rep.Best
	if err != nil {
		st.LocalRunnerError = modelset.UserText(err)
		return
	}
	for _, b := range rep.Builds {
		st.RunnerBuilds = append(st.RunnerBuilds, api.RunnerBuild{Path: b.Path, Variant: b.Variant, State: b.State, Why: b.Why})
	}
	// A running build is what is in use, whatever a fresh start would take.
	for _, r := range st.Runners {
		if r.Binary != "" {
			st.LocalRunner, st.LocalRunnerVariant = r.Binary, r.Variant
			for _, b := range rep.Builds {
				if b.Path == r.Binary {
					st.LocalRunnerCPU = b.CPUFeatures
				}
			}
			return
		}
	}
	if rep.Next.Path == "" {
		var why []string
		for _, b := range rep.Builds {
			why = append(why, b.Path+": "+b.Why)
		}
		st.LocalRunnerError = "no openclaw-runner build runs on this CPU (" + strings.Join(why, "; ") + "); rebuild it on this machine with make build"
		return
	}
	st.LocalRunner, st.LocalRunnerVariant, st.LocalRunnerCPU = rep.Next.Path, rep.Next.Variant, rep.Next.CPUFeatures
}

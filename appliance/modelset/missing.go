package modelset

import (
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/gateway"
)

// MissingModels names every configured model (each agent's primary and
// fallbacks, once) that cannot be used as configured: a local model whose
// file is not installed, a provider or model the config does not define.
// It is computed for `openclaw status` without calling any provider: a
// remote model that is defined but unreachable shows only when a turn
// tries it (the failover line and `last error`).
func (m *Set) MissingModels(ags []gateway.Agent) []api.ModelProblem {
	var out []api.ModelProblem
	seen := map[string]bool{}
	for _, a := range ags {
		refs := append([]string{a.Model}, a.Fallbacks...)
		for _, ref := range refs {
			if ref == "" || seen[ref] {
				continue
			}
			seen[ref] = true
			if _, _, err := m.candidates(ref); err != nil {
				out = append(out, api.ModelProblem{Model: ref, Agent: a.ID, Problem: UserText(err)})
			}
		}
	}
	return out
}

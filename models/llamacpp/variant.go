package llamacpp

// CPU variants of openclaw-runner. The embedded ggml is compiled by cgo with
// whatever CGO_CFLAGS say, and plain flags mean the architecture's baseline:
// SSE2 on x86-64 (no AVX, FMA or F16C), armv8-a on arm64 (no dot-product
// instructions, which quantized matmuls live on). That halves generation
// speed on a modern CPU. So the runner is built once per CPU family, with
// -march flags, into openclaw-runner-<variant> files beside the plain
// openclaw-runner, and the gateway starts the best one this CPU supports
// (golang.org/x/sys/cpu: CPUID on x86, HWCAP on arm64), like Ollama picks
// among its libggml-cpu-*.so builds. A variant that dies with SIGILL while
// starting (or says that this CPU lacks what it was built for) is marked
// unusable until its file changes or the gateway restarts, and the next
// one is started; the plain openclaw-runner is always last and never
// marked.
//
// Where the flags differ, every one of the cgo packages compiles again
// (minutes on a Pi), so `make build` builds only the building machine's
// variant (as the plain openclaw-runner) and `make release` builds them all.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/openclaw-edge/edge/engine"
)

// Variant is one build of openclaw-runner for a CPU family.
type Variant struct {
	// Name is the file suffix: openclaw-runner-<Name>.
	Name string `json:"name"`
	// Arch is the GOARCH it is built for.
	Arch string `json:"arch"`
	// CFlags are added to CGO_CFLAGS and CGO_CXXFLAGS ("": the compiler's
	// default for Arch, the baseline).
	CFlags string `json:"cflags,omitempty"`
	// Needs are the CPU features (CPUFeatures names) it executes.
	Needs []string `json:"needs,omitempty"`
	// About says which machines it is for.
	About string `json:"about"`
}

// Variants are the runner builds, best first within each architecture.
// AVX-512 pays on this project's reference x86 machine (ggml has AVX-512
// kernels for its F32/F16 and quantized dot products), so it is its own
// variant; Pi 5, and Apple M-series, get armv8.2-a with the dot-product and
// half-precision instructions (Cortex-A76), Pi 4 (Cortex-A72) the baseline.
var Variants = []Variant{
	{Name: "x86-64-v4", Arch: "amd64", CFlags: "-march=x86-64-v4",
		Needs: []string{"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "lzcnt", "movbe", "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
		About: "AVX-512 (Intel Skylake-X, Ice Lake, Sapphire Rapids; AMD Zen 4 and later)"},
	{Name: "x86-64-v3", Arch: "amd64", CFlags: "-march=x86-64-v3",
		Needs: []string{"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "lzcnt", "movbe"},
		About: "AVX2, FMA, F16C (Intel Haswell and later, AMD Zen)"},
	{Name: "x86-64", Arch: "amd64",
		About: "any x86-64 CPU (SSE2)"},
	{Name: "armv8.2-a-dotprod-fp16", Arch: "arm64", CFlags: "-march=armv8.2-a+dotprod+fp16",
		Needs: []string{"asimddp", "fphp", "asimdhp"},
		About: "Raspberry Pi 5 (Cortex-A76), Apple M-series, Graviton 2 and later"},
	{Name: "armv8-a", Arch: "arm64",
		About: "any arm64 CPU (Raspberry Pi 4, Cortex-A72)"},
}

// CgoFlags are the CGO_CFLAGS and CGO_CXXFLAGS v is compiled with:
// llama.cpp's own release flags ("-O3 -DNDEBUG"; Go's default is "-O2 -g",
// and the vendored ggml asks for -O3 only for its C files, so its C++
// kernels — vec.cpp, ops.cpp, llamafile's sgemm — were built at -O2 and,
// outside ggml-cpu, with assertions on), "-g" as Go has it, and v's own
// flags. Every build of v must use exactly this string, or Go's build
// cache compiles llama.cpp once more. And GGML_USE_CPU_REPACK, which
// llama.cpp's CMake build sets by default and
// the binding's cgo build leaves out: without it the CPU backend does not
// repack Q4_0/Q4_K/IQ4_NL weights into its interleaved layouts, and a
// real-size Q4_K_M model ran at 0.48x generation and 0.33x prompt speed of
// llama-bench (qwen3-0.6b-shape, 2 threads, issue 24).
func (v Variant) CgoFlags() string {
	return strings.TrimSpace("-O3 -DNDEBUG -g -DGGML_USE_CPU_REPACK " + v.CFlags)
}

// VariantsFor lists the variants of one architecture, best first.
func VariantsFor(goarch string) []Variant {
	var out []Variant
	for _, v := range Variants {
		if v.Arch == goarch {
			out = append(out, v)
		}
	}
	return out
}

// VariantByName finds a variant by name.
func VariantByName(name string) (Variant, bool) {
	for _, v := range Variants {
		if v.Name == name {
			return v, true
		}
	}
	return Variant{}, false
}

// Missing lists the features v needs that have lacks (nil: v runs here).
func (v Variant) Missing(have []string) []string {
	var out []string
	for _, n := range v.Needs {
		if !slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	return out
}

// BestVariant is the best variant of goarch whose needs have covers; every
// architecture has a baseline that needs nothing. ok is false for an
// architecture with no variants.
func BestVariant(goarch string, have []string) (Variant, bool) {
	for _, v := range VariantsFor(goarch) {
		if len(v.Missing(have)) == 0 {
			return v, true
		}
	}
	return Variant{}, false
}

// HostVariant is the best variant for the CPU this process runs on.
func HostVariant() (Variant, bool) { return BestVariant(runtime.GOARCH, CPUFeatures()) }

// CPUFeatures lists the features of this CPU that the variants look at (and
// a few more worth reporting), lower case as in /proc/cpuinfo. On x86 they
// come from CPUID and XGETBV (the OS saves the wide registers); on arm64
// from the kernel's HWCAP. On darwin/arm64 every Apple chip has the
// armv8.2-a dot-product and FP16 instructions, which x/sys/cpu does not
// report there.
func CPUFeatures() []string {
	var out []string
	add := func(name string, has bool) {
		if has {
			out = append(out, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64":
		x := cpu.X86
		add("sse3", x.HasSSE3)
		add("ssse3", x.HasSSSE3)
		add("sse4_1", x.HasSSE41)
		add("sse4_2", x.HasSSE42)
		add("popcnt", x.HasPOPCNT)
		add("avx", x.HasAVX)
		add("avx2", x.HasAVX2)
		add("bmi1", x.HasBMI1)
		add("bmi2", x.HasBMI2)
		add("f16c", x.HasF16C)
		add("fma", x.HasFMA)
		add("lzcnt", x.HasLZCNT)
		add("movbe", x.HasMOVBE)
		add("avx_vnni", x.HasAVXVNNI)
		add("avx512f", x.HasAVX512F)
		add("avx512bw", x.HasAVX512BW)
		add("avx512cd", x.HasAVX512CD)
		add("avx512dq", x.HasAVX512DQ)
		add("avx512vl", x.HasAVX512VL)
		add("avx512vnni", x.HasAVX512VNNI)
		add("avx512vbmi", x.HasAVX512VBMI)
		add("avx512bf16", x.HasAVX512BF16)
		add("amx_bf16", x.HasAMXBF16)
	case "arm64":
		a := cpu.ARM64
		if runtime.GOOS == "darwin" {
			return []string{"asimd", "fphp", "asimdhp", "asimddp"}
		}
		add("asimd", a.HasASIMD)
		add("fphp", a.HasFPHP)
		add("asimdhp", a.HasASIMDHP)
		add("asimddp", a.HasASIMDDP)
		add("i8mm", a.HasI8MM)
		add("sve", a.HasSVE)
		add("sve2", a.HasSVE2)
	}
	return out
}

// cpuFeatures is CPUFeatures, replaceable by tests (export_test.go) that
// must not depend on the machine they run on.
var cpuFeatures = CPUFeatures

// RunnerBinary is one openclaw-runner the gateway may start.
type RunnerBinary struct {
	Path string `json:"path"`
	// Variant is the build's name taken from the file name
	// (openclaw-runner-<variant>); "" for the plain openclaw-runner, which
	// reports its variant when it starts.
	Variant string `json:"variant,omitempty"`
	// last: nothing to fall back to after it (the supervisor sets it).
	last bool
}

// VariantEnv names the environment variable that makes the gateway start
// one variant only, by name (OPENCLAW_RUNNER_VARIANT=x86-64-v3), e.g. to
// compare them or to step around a bad build.
const VariantEnv = "OPENCLAW_RUNNER_VARIANT"

// FoundVariant is a variant file found beside the runner and whether this
// CPU can run it.
type FoundVariant struct {
	RunnerBinary
	// Missing are the CPU features it needs that this CPU lacks.
	Missing []string `json:"missing,omitempty"`
}

// FindRunners returns the runner binaries to try for a local model, best
// first: the openclaw-runner-<variant> files beside FindRunner's binary that
// this CPU supports, then that binary itself. skipped lists the variant
// files found that this CPU cannot run. With $OPENCLAW_RUNNER_VARIANT set,
// only that variant is returned (or an error that says why it cannot be).
func FindRunners() (try []RunnerBinary, skipped []FoundVariant, err error) {
	anchor, err := FindRunner()
	if err != nil {
		return nil, nil, err
	}
	return runnersBeside(anchor, runtime.GOARCH, cpuFeatures(), os.Getenv(VariantEnv))
}

func runnersBeside(anchor, goarch string, have []string, only string) (try []RunnerBinary, skipped []FoundVariant, err error) {
	dir := filepath.Dir(anchor)
	if only != "" {
		v, ok := VariantByName(only)
		if !ok || v.Arch != goarch {
			var names []string
			for _, v := range VariantsFor(goarch) {
				names = append(names, v.Name)
			}
			return nil, nil, fmt.Errorf("%s=%s: no such runner variant for %s (known: %s)", VariantEnv, only, goarch, strings.Join(names, ", "))
		}
		p := filepath.Join(dir, RunnerName+"-"+v.Name)
		if err := trustedExecutable(p); err != nil {
			return nil, nil, fmt.Errorf("%s=%s: %s: %w", VariantEnv, only, p, err)
		}
		if m := v.Missing(have); len(m) > 0 {
			return nil, nil, fmt.Errorf("%s=%s: this CPU lacks %s", VariantEnv, only, strings.Join(m, ", "))
		}
		return []RunnerBinary{{Path: p, Variant: v.Name}}, nil, nil
	}
	for _, v := range VariantsFor(goarch) {
		p := filepath.Join(dir, RunnerName+"-"+v.Name)
		if trustedExecutable(p) != nil {
			continue // absent, or a file others could have put there
		}
		if m := v.Missing(have); len(m) > 0 {
			skipped = append(skipped, FoundVariant{RunnerBinary: RunnerBinary{Path: p, Variant: v.Name}, Missing: m})
			continue
		}
		try = append(try, RunnerBinary{Path: p, Variant: v.Name})
	}
	return append(try, RunnerBinary{Path: anchor}), skipped, nil
}

// trustedExecutable is engine.IsExecutable for a variant file, which the gateway
// starts on its own (the runner itself was named by the user or the
// install): it and its directory must belong to this user or root and be
// writable by no one else, so a file dropped beside a runner in /tmp or a
// shared directory is never run.
func trustedExecutable(path string) error {
	if err := engine.IsExecutable(path); err != nil {
		return err
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if err := ownedSafely(fi); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// ExitUnsupportedCPU is the exit status of a runner started on a CPU that
// lacks what its variant was built for (it checks before loading anything;
// a CPU that lacks them may also kill it with SIGILL earlier, in llama.cpp's
// C++ initialisers). The gateway treats both alike.
const ExitUnsupportedCPU = 86

// errUnusable marks a runner binary that cannot run on this CPU.
var errUnusable = errors.New("cannot run on this CPU")

// BuildState is one runner build as status and doctor show it.
type BuildState struct {
	Path    string `json:"path"`
	Variant string `json:"variant,omitempty"`
	// State: "next" (the build the next start uses, or the one running),
	// "fallback" (used if the ones before it cannot run), "failing" (its
	// --version failed: the start will say why), "unusable"
	// (it died of SIGILL or said this CPU lacks its instructions),
	// "skipped" (this CPU lacks what it needs: never started).
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// CPUFeatures are what llama.cpp was compiled to use in it ("AVX2 FMA
	// …"), as the build reports them; "" when unknown.
	CPUFeatures string `json:"cpuFeatures,omitempty"`
}

// RunnerReport says which runner builds there are and which one local
// models use on this CPU.
type RunnerReport struct {
	CPUFeatures []string     `json:"cpuFeatures"`
	Best        string       `json:"best"` // the best variant this CPU supports
	Builds      []BuildState `json:"builds"`
	// Next is the build the next start uses (Builds[i].State "next");
	// empty when none can run.
	Next BuildState `json:"next"`
}

// Report describes the runner builds for status and doctor. Each build is
// asked its variant and features (`--version`, once per file version); one
// that dies answering of an instruction this CPU lacks shows as unusable.
// Only a start marks builds (it knows which one is last).
func (p *Pool) Report() (RunnerReport, error) {
	rep := RunnerReport{CPUFeatures: cpuFeatures()}
	if v, ok := BestVariant(runtime.GOARCH, rep.CPUFeatures); ok {
		rep.Best = v.Name
	}
	try, skipped, err := FindRunners()
	if err != nil {
		return rep, err
	}
	for _, b := range try {
		st := BuildState{Path: b.Path, Variant: b.Variant, State: "fallback"}
		if why := p.unusable.get(b.Path); why != "" {
			st.State, st.Why = "unusable", why
		} else if info, err := p.probeRunner(b.Path); err != nil {
			if errors.Is(err, errUnusable) {
				st.State, st.Why = "unusable", strings.TrimPrefix(err.Error(), errUnusable.Error()+": ")
			} else {
				st.State, st.Why = "failing", err.Error()
			}
		} else {
			st.Variant = cmp.Or(st.Variant, info.Variant)
			st.CPUFeatures = info.CPUFeatures
		}
		if st.State == "fallback" && rep.Next.Path == "" {
			st.State = "next"
			rep.Next = st
		}
		rep.Builds = append(rep.Builds, st)
	}
	for _, s := range skipped {
		rep.Builds = append(rep.Builds, BuildState{Path: s.Path, Variant: s.Variant, State: "skipped", Why: "this CPU lacks " + strings.Join(s.Missing, ", ")})
	}
	return rep, nil
}

// runnerVersion is what `openclaw-runner --version` says.
type runnerVersion struct {
	Variant, CPUFeatures string
}

// probed is a probe's outcome, failures included (a build that hangs or
// fails on --version is not run again for every status call).
type probed struct {
	v   runnerVersion
	err error
}

var probeCache sync.Map // fileKey → probed

// probeRunner runs `path --version` (5 s at most), once per file version.
// An error wrapping errUnusable means the build cannot run on this CPU.
// A good answer is also kept in Config.ProbeCache, so a restarted gateway's
// first status does not start the runner (30-40 ms here, the whole of a
// 13 MB binary's load: more on a Pi).
func (p *Pool) probeRunner(path string) (runnerVersion, error) {
	key, err := fileKey(path)
	if err != nil {
		return runnerVersion{}, err
	}
	if v, ok := probeCache.Load(key); ok {
		return v.(probed).v, v.(probed).err
	}
	if v, ok := p.diskProbes()[key]; ok {
		probeCache.Store(key, probed{v, nil})
		return v, nil
	}
	v, err := runVersion(path)
	probeCache.Store(key, probed{v, err})
	if err == nil && p.cfg.ProbeCache != "" {
		p.diskProbes() // read once, before the lock below
		p.probeMu.Lock()
		m := maps.Clone(p.probes)
		m[key] = v
		if data, err := json.Marshal(m); err == nil {
			tmp := p.cfg.ProbeCache + ".tmp"
			if os.WriteFile(tmp, data, 0o600) == nil {
				_ = os.Rename(tmp, p.cfg.ProbeCache)
			}
		}
		p.probes = m
		p.probeMu.Unlock()
	}
	return v, err
}

// diskProbes is Config.ProbeCache's content, read once; entries of files
// that changed are never looked up (the key has the size and time).
func (p *Pool) diskProbes() map[string]runnerVersion {
	p.probeMu.Lock()
	defer p.probeMu.Unlock()
	if p.probes == nil {
		p.probes = map[string]runnerVersion{}
		if p.cfg.ProbeCache != "" {
			if data, err := os.ReadFile(p.cfg.ProbeCache); err == nil {
				_ = json.Unmarshal(data, &p.probes) // unreadable: probe again
			}
		}
	}
	return p.probes
}

// fileKey names one version of a file: path, size and modification time.
func fileKey(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(path, " ", fi.Size(), " ", fi.ModTime().UnixNano()), nil
}

func runVersion(path string) (runnerVersion, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stderr := &tailBuffer{max: 8 << 10}
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second // a child that keeps the pipes open
	out, err := cmd.Output()
	if err != nil {
		msg := describeExit(err, stderr.lastLine())
		if wrongCPU(err) {
			return runnerVersion{}, fmt.Errorf("%w: %s", errUnusable, msg)
		}
		return runnerVersion{}, fmt.Errorf("%s --version: %s", filepath.Base(path), msg)
	}
	// "openclaw-runner VERSION OS/ARCH variant NAME; llama.cpp CPU: A B C"
	var v runnerVersion
	line := strings.TrimSpace(string(out))
	if _, rest, ok := strings.Cut(line, " variant "); ok {
		name, feats, _ := strings.Cut(rest, "; llama.cpp CPU: ")
		if name != "unknown" {
			v.Variant = name
		}
		v.CPUFeatures = feats
	}
	return v, nil
}

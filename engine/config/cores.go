package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// physicalCores counts the physical CPU cores this process may use: Linux
// sysfs topology (distinct package and core ids of the online CPUs), at most
// runtime.NumCPU (which honours the affinity mask); elsewhere, or when sysfs
// says nothing, runtime.NumCPU. llama.cpp generation is memory bound and
// hyper-threads only add contention, hence physical cores.
func physicalCores() int {
	n := runtime.NumCPU()
	if runtime.GOOS != "linux" {
		return n
	}
	cpus, err := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology/core_id")
	if err != nil || len(cpus) == 0 {
		return n
	}
	cores := map[string]bool{}
	for _, coreFile := range cpus {
		topo := filepath.Dir(coreFile)
		core, err1 := os.ReadFile(coreFile)
		pkg, err2 := os.ReadFile(filepath.Join(topo, "physical_package_id"))
		if err1 != nil || err2 != nil {
			continue
		}
		cores[strings.TrimSpace(string(pkg))+"/"+strings.TrimSpace(string(core))] = true
	}
	if len(cores) == 0 {
		return n
	}
	return max(1, min(len(cores), n))
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// capNames maps capability numbers to the names OCI specs use.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

type invocation struct {
	command, bundle, process string
}

// globalWithValue are runc's global flags that take a separate value.
var globalWithValue = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

// parseInvocation finds the runc subcommand and its --bundle/--process values.
func parseInvocation(args []string) invocation {
	var inv invocation
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			inv.command = a
			i++
			break
		}
		if globalWithValue[a] {
			i++
		}
	}
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--bundle" || a == "-b":
			if i+1 < len(args) {
				inv.bundle = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--bundle="):
			inv.bundle = strings.TrimPrefix(a, "--bundle=")
		case a == "--process" || a == "-p":
			if i+1 < len(args) {
				inv.process = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--process="):
			inv.process = strings.TrimPrefix(a, "--process=")
		}
	}
	return inv
}

// boundingSet reads CapBnd of this process.
func boundingSet() (map[string]bool, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("parse CapBnd %q: %w", v, err)
			}
			return capsFromMask(mask), nil
		}
	}
	return nil, fmt.Errorf("no CapBnd line in /proc/self/status")
}

func capsFromMask(mask uint64) map[string]bool {
	set := map[string]bool{}
	for i, name := range capNames {
		if mask&(1<<uint(i)) != 0 {
			set[name] = true
		}
	}
	return set
}

// filterSpec removes capabilities missing from allowed in every capability
// list of a bundle spec (process.capabilities) or a process spec
// (capabilities). Unknown names are kept: only known-missing ones go.
func filterSpec(data []byte, isProcess bool, allowed map[string]bool) ([]byte, bool, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, false, fmt.Errorf("parse spec: %w", err)
	}
	proc := doc
	if !isProcess {
		p, ok := doc["process"].(map[string]any)
		if !ok {
			return data, false, nil
		}
		proc = p
	}
	caps, ok := proc["capabilities"].(map[string]any)
	if !ok {
		return data, false, nil
	}
	known := map[string]bool{}
	for _, n := range capNames {
		known[n] = true
	}
	changed := false
	for kind, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			name, _ := c.(string)
			if known[name] && !allowed[name] {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[kind] = kept
	}
	if !changed {
		return data, false, nil
	}
	out, err := json.Marshal(doc)
	return out, true, err
}

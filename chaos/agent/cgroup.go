package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// CgroupFreezer is Freezer over a node's cgroup tree mounted at Root:
// cgroup v1's freezer controller (Root/freezer/…/freezer.state, FROZEN and
// THAWED) when it is there, as on these machines (hybrid v1), else cgroup
// v2's cgroup.freeze (1 and 0, confirmed by "frozen 1" in cgroup.events).
// The kernel freezes every task of the cgroup, so the whole process tree
// stops at once and no signal reaches it: the process cannot tell.
type CgroupFreezer struct {
	Root string
	// Settle bounds how long Freeze waits for FREEZING to become FROZEN.
	Settle time.Duration

	mu    sync.Mutex
	cache map[string]string // container id → directory
}

// V1 reports whether the v1 freezer controller is mounted under Root.
func (c *CgroupFreezer) V1() bool {
	_, err := os.Stat(filepath.Join(c.Root, "freezer"))
	return err == nil
}

func (c *CgroupFreezer) tree() string {
	if c.V1() {
		return filepath.Join(c.Root, "freezer")
	}
	return c.Root
}

// Find walks the tree for the directory named after the container id
// ("cri-containerd-<id>.scope" with the systemd driver, "<id>" with
// cgroupfs), below a directory naming the pod's UID.
func (c *CgroupFreezer) Find(podUID, containerID string) (string, error) {
	if containerID == "" {
		return "", errors.New("container has no id yet")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.cache[containerID]; ok && !gone(p) {
		return p, nil
	}
	root := c.tree()
	uid := strings.ReplaceAll(podUID, "-", "_")
	var found string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a cgroup removed while walking
		}
		if !d.IsDir() {
			return nil
		}
		if strings.Contains(d.Name(), containerID) && (podUID == "" || strings.Contains(p, podUID) || strings.Contains(p, uid)) {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if found == "" {
		return "", fmt.Errorf("no cgroup for container %s (pod %s) under %s", containerID, podUID, root)
	}
	if c.cache == nil {
		c.cache = map[string]string{}
	}
	c.cache[containerID] = found
	return found, nil
}

// Freeze freezes the cgroup at path and waits until the kernel reports it
// frozen.
func (c *CgroupFreezer) Freeze(path string) error {
	if err := c.write(path, true); err != nil {
		return err
	}
	settle := c.Settle
	if settle <= 0 {
		settle = 5 * time.Second
	}
	deadline := time.Now().Add(settle)
	for {
		frozen, err := c.Frozen(path)
		if err != nil {
			return err
		}
		if frozen {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze %s: not frozen after %s", path, settle)
		}
		time.Sleep(5 * time.Millisecond) // the kernel gives no event to wait on in v1
	}
}

// Thaw thaws the cgroup at path (a cgroup that is gone has no tasks left
// to thaw).
func (c *CgroupFreezer) Thaw(path string) error {
	if gone(path) {
		return nil
	}
	return c.write(path, false)
}

func (c *CgroupFreezer) write(path string, freeze bool) error {
	file, val := filepath.Join(path, "freezer.state"), "THAWED"
	if freeze {
		val = "FROZEN"
	}
	if !c.V1() {
		file, val = filepath.Join(path, "cgroup.freeze"), "0"
		if freeze {
			val = "1"
		}
	}
	if err := os.WriteFile(file, []byte(val), 0); err != nil {
		return fmt.Errorf("write %s to %s: %w", val, file, err)
	}
	return nil
}

// Frozen reads the kernel's state of the cgroup at path.
func (c *CgroupFreezer) Frozen(path string) (bool, error) {
	if c.V1() {
		b, err := os.ReadFile(filepath.Join(path, "freezer.state"))
		if err != nil {
			return false, err
		}
		return strings.TrimSpace(string(b)) == "FROZEN", nil
	}
	b, err := os.ReadFile(filepath.Join(path, "cgroup.events"))
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "frozen 1" {
			return true, nil
		}
	}
	return false, nil
}

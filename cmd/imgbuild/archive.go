package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// manifestEntry is one image in a docker archive's manifest.json.
type manifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

func readManifest(path string) ([]manifestEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no manifest.json (not a docker image archive)", path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if hdr.Name == "manifest.json" {
			var m []manifestEntry
			if err := json.NewDecoder(tr).Decode(&m); err != nil {
				return nil, fmt.Errorf("%s: manifest.json: %w", path, err)
			}
			return m, nil
		}
	}
}

// repositoriesFor builds the legacy `repositories` map (repo -> tag -> id).
func repositoriesFor(entries []manifestEntry) (map[string]map[string]string, error) {
	repos := map[string]map[string]string{}
	for _, e := range entries {
		id := strings.TrimSuffix(strings.TrimPrefix(e.Config, "sha256:"), ".json")
		for _, rt := range e.RepoTags {
			i := strings.LastIndex(rt, ":")
			if i < 0 || strings.Contains(rt[i:], "/") {
				return nil, fmt.Errorf("repo tag %q has no tag", rt)
			}
			repo, tag := rt[:i], rt[i+1:]
			if repos[repo] == nil {
				repos[repo] = map[string]string{}
			}
			repos[repo][tag] = id
		}
	}
	return repos, nil
}

// mergeArchives writes `repositories` first, then manifest.json, then every
// other entry of the inputs once (blob names are content addressed).
func mergeArchives(out string, inputs []string) error {
	var all []manifestEntry
	for _, in := range inputs {
		m, err := readManifest(in)
		if err != nil {
			return err
		}
		all = append(all, m...)
	}
	repos, err := repositoriesFor(all)
	if err != nil {
		return err
	}
	return writeAtomic(out, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		for _, meta := range []struct {
			name string
			v    any
		}{{"repositories", repos}, {"manifest.json", all}} {
			data, err := json.Marshal(meta.v)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Name: meta.name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		}
		seen := map[string]bool{"repositories": true, "manifest.json": true}
		for _, in := range inputs {
			if err := copyEntries(tw, in, seen); err != nil {
				return err
			}
		}
		return tw.Close()
	})
}

func copyEntries(tw *tar.Writer, in string, seen map[string]bool) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		if seen[hdr.Name] {
			continue
		}
		seen[hdr.Name] = true
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}

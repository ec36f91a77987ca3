package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// A stored layer is a root filesystem compressed once (`imgbuild layer`)
// for every image built on it (`imgbuild image --layer`): the node image
// puts the node's root filesystem under four images, and compressing it
// was most of each one's time. FILE holds the gzip stream as an image
// carries it, FILE.json its digests, so a user reads neither the
// uncompressed tar nor the gzip stream twice.
type layerDesc struct {
	Digest v1.Hash `json:"digest"`  // of FILE: the layer blob
	DiffID v1.Hash `json:"diff_id"` // of the uncompressed tar
	Size   int64   `json:"size"`    // of FILE
}

func descPath(file string) string { return file + ".json" }

// writeLayer compresses the tar at src into out and writes out.json.
func writeLayer(src, out string) error {
	l, err := tarball.LayerFromFile(src, layerOptions...)
	if err != nil {
		return fmt.Errorf("layer from %s: %w", src, err)
	}
	var d layerDesc
	if d.Digest, err = l.Digest(); err != nil {
		return err
	}
	if d.DiffID, err = l.DiffID(); err != nil {
		return err
	}
	if d.Size, err = l.Size(); err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := writeAtomic(out, func(w io.Writer) error { _, err := io.Copy(w, rc); return err }); err != nil {
		return err
	}
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(descPath(out), func(w io.Writer) error { _, err := w.Write(append(js, '\n')); return err })
}

// writeAtomic writes path through write into path.tmp, renamed into place
// only when all of it was written: a failed run leaves no output behind.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// storedLayer is a layer made by writeLayer. Its blob's digest is checked
// against FILE.json when it is opened (a blob changed after the fact would
// otherwise go into an image under another blob's digest).
type storedLayer struct {
	file string
	desc layerDesc
}

func openLayer(file string) (v1.Layer, error) {
	js, err := os.ReadFile(descPath(file))
	if err != nil {
		return nil, fmt.Errorf("--layer %s: %w (made by `imgbuild layer`?)", file, err)
	}
	var d layerDesc
	if err := json.Unmarshal(js, &d); err != nil {
		return nil, fmt.Errorf("--layer %s: %s: %w", file, descPath(file), err)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--layer: %w", err)
	}
	defer f.Close()
	got, size, err := v1.SHA256(f)
	if err != nil {
		return nil, fmt.Errorf("--layer %s: %w", file, err)
	}
	if got != d.Digest || size != d.Size {
		return nil, fmt.Errorf("--layer %s: the file is %s (%d bytes), %s says %s (%d bytes)", file, got, size, descPath(file), d.Digest, d.Size)
	}
	return partial.CompressedToLayer(storedLayer{file: file, desc: d})
}

func (l storedLayer) Digest() (v1.Hash, error)            { return l.desc.Digest, nil }
func (l storedLayer) DiffID() (v1.Hash, error)            { return l.desc.DiffID, nil }
func (l storedLayer) Size() (int64, error)                { return l.desc.Size, nil }
func (l storedLayer) MediaType() (types.MediaType, error) { return types.DockerLayer, nil }
func (l storedLayer) Compressed() (io.ReadCloser, error)  { return os.Open(l.file) }

func runLayer(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("layer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output: the compressed layer, and its digests in OUT.json (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 1 {
		return fmt.Errorf("layer needs --out FILE and one uncompressed tar")
	}
	if _, err := os.Stat(fs.Arg(0)); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	return writeLayer(fs.Arg(0), *out)
}

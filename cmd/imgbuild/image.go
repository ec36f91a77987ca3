package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type fileAdd struct {
	Src, Dst string
	Mode     int64
}

type imageSpec struct {
	Tag, Out        string
	Layers          []string // made by `imgbuild layer`
	RootfsTars      []string
	Files           []fileAdd
	Entrypoint, Cmd []string
	Env             []string
	StopSignal      string
	WorkingDir      string
	User            string
}

func parseAdd(s string) (fileAdd, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
		return fileAdd{}, fmt.Errorf("--add %q: want SRC:/ABS/DST[:MODE]", s)
	}
	f := fileAdd{Src: parts[0], Dst: parts[1], Mode: 0o755}
	if len(parts) == 3 {
		m, err := strconv.ParseInt(parts[2], 8, 32)
		if err != nil {
			return fileAdd{}, fmt.Errorf("--add %q: bad octal mode: %v", s, err)
		}
		f.Mode = m
	}
	return f, nil
}

func (s imageSpec) validate() error {
	if s.Tag == "" || s.Out == "" {
		return fmt.Errorf("image needs --tag and --out")
	}
	if _, err := name.NewTag(s.Tag); err != nil {
		return fmt.Errorf("--tag %q: %v", s.Tag, err)
	}
	if len(s.Layers) == 0 && len(s.RootfsTars) == 0 && len(s.Files) == 0 {
		return fmt.Errorf("image needs at least one --layer, --rootfs-tar or --add")
	}
	for _, e := range s.Env {
		if !strings.Contains(e, "=") {
			return fmt.Errorf("--env %q: want K=V", e)
		}
	}
	for _, p := range s.RootfsTars {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("--rootfs-tar: %v", err)
		}
	}
	for _, f := range s.Files {
		if st, err := os.Stat(f.Src); err != nil {
			return fmt.Errorf("--add: %v", err)
		} else if st.IsDir() {
			return fmt.Errorf("--add %s: is a directory", f.Src)
		}
	}
	return nil
}

// filesLayerTar builds a reproducible tar (fixed times, root owner) holding
// the files and their parent directories.
func filesLayerTar(files []fileAdd) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	var dirList []string
	for _, f := range files {
		for d := path.Dir(f.Dst); d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			dirList = append(dirList, d)
		}
	}
	sort.Strings(dirList)
	epoch := time.Unix(0, 0)
	for _, d := range dirList {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f.Src)
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Dst, "/"), Mode: f.Mode, Size: int64(len(data)), ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layerOptions is how every layer is compressed, here and by `imgbuild
// layer` (an image on a stored layer is byte-identical to one on its tar):
// gzip's fastest level, and once (go-containerregistry otherwise compresses
// a layer again to write it after compressing it for its digest).
var layerOptions = []tarball.LayerOption{tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithCompressedCaching}

func assembleImage(s imageSpec) (v1.Image, error) {
	img := empty.Image
	var layers []v1.Layer
	for _, p := range s.Layers {
		l, err := openLayer(p)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	for _, p := range s.RootfsTars {
		l, err := tarball.LayerFromFile(p, layerOptions...)
		if err != nil {
			return nil, fmt.Errorf("layer from %s: %w", p, err)
		}
		layers = append(layers, l)
	}
	if len(s.Files) > 0 {
		data, err := filesLayerTar(s.Files)
		if err != nil {
			return nil, err
		}
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, layerOptions...)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: time.Unix(0, 0)}
	env := s.Env
	if !hasEnv(env, "PATH") {
		env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	}
	cf.Config.Env = env
	cf.Config.Entrypoint = s.Entrypoint
	cf.Config.Cmd = s.Cmd
	cf.Config.StopSignal = s.StopSignal
	cf.Config.WorkingDir = s.WorkingDir
	cf.Config.User = s.User
	return mutate.ConfigFile(img, cf)
}

func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

func buildImage(s imageSpec) error {
	img, err := assembleImage(s)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(s.Tag)
	if err != nil {
		return err
	}
	tmp := s.Out + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", s.Out, err)
	}
	return os.Rename(tmp, s.Out)
}

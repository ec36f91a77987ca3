// Package images lets the suite run on a cluster that pulls its images from
// a registry (--image-repo REGISTRY/PATH): it pushes the image archives
// scripts/images.sh builds, and rewrites every pod spec the suite creates
// from the names the manifests use (fencecheck/NAME:dev, which only
// `kind load` puts on a node) to the pushed references, by digest.
package images

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// OurRepoPrefix is the repository prefix of the images this project
// builds: an image under it that was not pushed cannot run from a registry.
const OurRepoPrefix = "fencecheck/"

// Repo is where --image-repo pushes: REGISTRY/PATH, each image at
// REGISTRY/PATH/NAME.
type Repo struct {
	Registry string // host[:port]
	Path     string // one or more path elements, no leading or trailing slash
}

func (r Repo) String() string { return r.Registry + "/" + r.Path }

// Image is the repository for one image NAME under r.
func (r Repo) Image(n string) (name.Repository, error) {
	return name.NewRepository(r.String()+"/"+n, name.StrictValidation)
}

// ParseRepo parses --image-repo. The registry host comes first and is
// explicit (a first element without '.' or ':' is not a host but a Docker
// Hub path, which is almost always a mistake here), a path follows, and
// there is no tag or digest (each image brings its own).
func ParseRepo(s string) (Repo, error) {
	bad := func(why string) (Repo, error) {
		return Repo{}, fmt.Errorf("--image-repo %q: %s (want REGISTRY/PATH, e.g. registry.example.com/team/fencecheck or 172.18.0.1:5000/fencecheck)", s, why)
	}
	if s == "" {
		return bad("empty")
	}
	if strings.Contains(s, "://") {
		return bad("no scheme: the registry is a host[:port]")
	}
	if strings.Contains(s, "@") {
		return bad("no digest: each pushed image gets its own")
	}
	host, path, ok := strings.Cut(s, "/")
	if !ok || path == "" {
		return bad("a path after the registry is required")
	}
	if slices.Contains(strings.Split(path, "/"), "") {
		return bad("an empty path element")
	}
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return bad(fmt.Sprintf("%q is not a registry host (it has no '.' or ':port')", host))
	}
	if h, p, err := net.SplitHostPort(host); err == nil && (h == "" || p == "") {
		return bad("the registry's host or port is empty")
	}
	if strings.Contains(path, ":") {
		return bad("no tag: each pushed image keeps its own")
	}
	if _, err := name.NewRegistry(host, name.StrictValidation); err != nil {
		return bad(err.Error())
	}
	r := Repo{Registry: host, Path: path}
	if _, err := name.NewRepository(r.String(), name.StrictValidation); err != nil {
		return bad(err.Error())
	}
	return r, nil
}

// Map maps an image as the manifests name it, in canonical form
// (index.docker.io/fencecheck/sink:dev), to its pushed reference by
// digest (REGISTRY/PATH/sink@sha256:...). A nil Map rewrites nothing: the
// images are on the nodes already (kind load).
type Map map[string]string

// Canonical is image's full name: fencecheck/sink:dev and
// docker.io/fencecheck/sink:dev are one image.
func Canonical(image string) (string, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", image, err)
	}
	return ref.Name(), nil
}

// ours says whether ref names one of this project's images (which no
// registry has unless we pushed it).
func ours(ref name.Reference) bool {
	c := ref.Context()
	return c.RegistryStr() == name.DefaultRegistry && strings.HasPrefix(c.RepositoryStr(), OurRepoPrefix)
}

// Resolve returns the reference image runs as: its pushed digest
// reference, or image itself when it is not ours (a user's controller
// from their own registry). One of our images missing from m is an error:
// it would sit in ImagePullBackOff.
func (m Map) Resolve(image string) (string, bool, error) {
	if m == nil {
		return image, false, nil
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", false, fmt.Errorf("image %q: %w", image, err)
	}
	if pushed, ok := m[ref.Name()]; ok {
		return pushed, true, nil
	}
	if ours(ref) {
		return "", false, fmt.Errorf("image %s was not pushed to the registry (pushed: %s): build and push it too (scripts/conformance.sh --controller-image, or the suite's --push-images)", image, strings.Join(m.sources(), ", "))
	}
	return image, false, nil
}

func (m Map) sources() []string {
	s := make([]string, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// RewritePod points every container of spec that runs a pushed image at
// its digest reference, pulled when the node does not have it: a digest
// names one image for good, so IfNotPresent never runs a stale one (Never,
// the manifests' policy for kind-loaded tags, would never pull).
func (m Map) RewritePod(spec *corev1.PodSpec) error {
	if m == nil {
		return nil
	}
	rewrite := func(image *string, policy *corev1.PullPolicy) error {
		ref, pushed, err := m.Resolve(*image)
		if err != nil {
			return err
		}
		if pushed {
			*image, *policy = ref, corev1.PullIfNotPresent
		}
		return nil
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if err := rewrite(&c.Image, &c.ImagePullPolicy); err != nil {
			return fmt.Errorf("init container %s: %w", c.Name, err)
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if err := rewrite(&c.Image, &c.ImagePullPolicy); err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i]
		if err := rewrite(&c.Image, &c.ImagePullPolicy); err != nil {
			return fmt.Errorf("ephemeral container %s: %w", c.Name, err)
		}
	}
	return nil
}

package images

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ReachTimeout bounds the registry check before any push: an unreachable
// registry is named at once, not after remote.Write's retries.
const ReachTimeout = 15 * time.Second

// Reachable checks that repo's registry answers and lets us push to it
// (credentials from the Docker config, as `docker push` would use).
func Reachable(ctx context.Context, repo Repo) error {
	r, err := repo.Image("probe")
	if err != nil {
		return err
	}
	auth, err := authn.Resolve(ctx, authn.DefaultKeychain, r)
	if err != nil {
		return fmt.Errorf("credentials for %s: %w", repo.Registry, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ReachTimeout)
	defer cancel()
	if _, err := transport.NewWithContext(ctx, r.Registry, auth, http.DefaultTransport, []string{r.Scope(transport.PushScope)}); err != nil {
		return fmt.Errorf("registry %s (%s) is unreachable or refuses pushes to %s: %w", repo.Registry, r.Registry.Scheme(), repo, err)
	}
	return nil
}

// Push pushes each single-image archive (as scripts/images.sh writes them,
// tagged docker.io/fencecheck/NAME:TAG) to repo as NAME:TAG and returns
// the Map from each archive's tag to the pushed digest reference. The
// digest is read back from the registry: the Map names what the registry
// serves, not what we meant to send.
func Push(ctx context.Context, repo Repo, archives []string, logf func(string, ...any)) (Map, error) {
	if err := Reachable(ctx, repo); err != nil {
		return nil, err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	m := Map{}
	for _, a := range archives {
		src, err := archiveTag(a)
		if err != nil {
			return nil, err
		}
		img, err := tarball.ImageFromPath(a, &src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		r, err := repo.Image(path.Base(src.RepositoryStr()))
		if err != nil {
			return nil, err
		}
		dst := r.Tag(src.TagStr())
		start := time.Now()
		if err := remote.Write(dst, img, opts...); err != nil {
			return nil, fmt.Errorf("push %s to %s: %w", a, dst, err)
		}
		desc, err := remote.Head(dst, opts...)
		if err != nil {
			return nil, fmt.Errorf("read back %s: %w", dst, err)
		}
		want, err := img.Digest()
		if err != nil {
			return nil, err
		}
		if desc.Digest != want {
			return nil, fmt.Errorf("%s: the registry serves %s, we pushed %s", dst, desc.Digest, want)
		}
		m[src.Name()] = r.Digest(desc.Digest.String()).String()
		if logf != nil {
			logf("pushed %s as %s in %s", src, m[src.Name()], time.Since(start).Round(time.Millisecond))
		}
	}
	return m, nil
}

// archiveTag is the one tag a single-image archive carries.
func archiveTag(archive string) (name.Tag, error) {
	mf, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		return name.Tag{}, fmt.Errorf("%s: not an image archive: %w (scripts/images.sh --no-load builds them)", archive, err)
	}
	if len(mf) != 1 || len(mf[0].RepoTags) != 1 {
		return name.Tag{}, fmt.Errorf("%s: want one image with one tag, found %d images", archive, len(mf))
	}
	t, err := name.NewTag(mf[0].RepoTags[0])
	if err != nil {
		return name.Tag{}, fmt.Errorf("%s: tag %q: %w", archive, mf[0].RepoTags[0], err)
	}
	return t, nil
}

// WriteFile records m as JSON (the suite keeps it beside the reports).
func (m Map) WriteFile(file string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

func TestPushImagesFlags(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "--image-repo is required"},
		{[]string{"--image-repo", "fencecheck", "a.tar"}, exitUsage, "a path after the registry is required"},
		{[]string{"--image-repo", "myorg/fencecheck", "a.tar"}, exitUsage, `"myorg" is not a registry host`},
		{[]string{"--image-repo", "reg.example.com/fc"}, exitUsage, "no archives to push"},
		{[]string{"--image-repo", "reg.example.com/fc", "--check", "a.tar"}, exitUsage, "--check takes no archives"},
		{[]string{"--image-repo", closed + "/fc", "--check"}, exitFailed, "registry " + closed + " (http) is unreachable"},
	} {
		var out, errb bytes.Buffer
		if code := runPushImages(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("push-images %q: exit %d, %q; want %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

//go:build tools

// Package tools pins the tools the scripts run (go run -modfile=tools/go.mod
// ...), so that no script fetches whatever @latest is today. A module of
// its own: the tools' dependencies stay out of the main go.mod.
package tools

import _ "gotest.tools/gotestsum"

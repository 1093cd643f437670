// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package version says which build of sandbox-apiserver is running, for --version and the
// agent_sandbox_build_info metric.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time with -ldflags "-X github.com/sandbox-apiserver/sandbox-apiserver/pkg/version.gitVersion=v1.2.3"
// (and gitCommit, buildDate); otherwise they come from what the Go toolchain recorded of the
// checkout the binary was built from.
var (
	gitVersion = ""
	gitCommit  = ""
	buildDate  = ""
)

// Info describes a build.
type Info struct {
	GitVersion string
	GitCommit  string
	BuildDate  string
	GoVersion  string
	Compiler   string
	Platform   string
}

// String is the one line --version prints.
func (i Info) String() string {
	return fmt.Sprintf("sandbox-apiserver %s (commit %s, built %s, %s %s)", i.GitVersion, i.GitCommit, i.BuildDate, i.GoVersion, i.Platform)
}

// Get returns the running build's information. Unknown values are "unknown".
func Get() Info {
	info := Info{
		GitVersion: gitVersion,
		GitCommit:  gitCommit,
		BuildDate:  buildDate,
		GoVersion:  runtime.Version(),
		Compiler:   runtime.Compiler,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fromBuildInfo(&info, bi)
	}
	for _, v := range []*string{&info.GitVersion, &info.GitCommit, &info.BuildDate} {
		if *v == "" {
			*v = "unknown"
		}
	}
	return info
}

// fromBuildInfo fills what the link-time values left empty from the toolchain's record: the
// module version of a released build, the VCS revision and time of a build from a checkout.
func fromBuildInfo(info *Info, bi *debug.BuildInfo) {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if info.GitCommit == "" {
		info.GitCommit = settings["vcs.revision"]
	}
	if info.BuildDate == "" {
		info.BuildDate = settings["vcs.time"]
	}
	if info.GitVersion != "" {
		return
	}
	switch {
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		info.GitVersion = bi.Main.Version
	case info.GitCommit != "":
		info.GitVersion = "v0.0.0-dev+" + info.GitCommit[:min(12, len(info.GitCommit))]
		if settings["vcs.modified"] == "true" {
			info.GitVersion += "-dirty"
		}
	}
}

// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The chart mode (SANDBOX_APISERVER_MODE=chart, make run-chart): instead of running
// sandbox-apiserver and sandbox-etcd as processes here, the plane installs them with the Helm
// chart on its real node, as an operator would on a cluster. The images come from
// hack/build-image.sh (OCI layouts under _output/images, no registry) and are imported into the
// node's containerd; helm install then gets the chart's defaults and only the image overrides,
// plus the one value a single node needs (ChartValues). Stop takes back what the install added.

const (
	// ChartRelease and ChartNamespace are the install's, those docs/operating.md uses.
	ChartRelease   = "sandbox-apiserver"
	ChartNamespace = "sandbox-system"
	// imageRegistry prefixes the imported images' names: containerd keeps them under it and the
	// node never pulls them (pull policy Never).
	imageRegistry = "localhost"
)

// Image is an image layout of hack/build-image.sh: Dir holds it, Name is the binary's name, Tag
// the version it is tagged with (its index's org.opencontainers.image.ref.name).
type Image struct {
	Dir, Name, Tag string
}

// Repository is the name the node knows the image by.
func (i Image) Repository() string { return imageRegistry + "/" + i.Name }

// Ref is the image's full reference.
func (i Image) Ref() string { return i.Repository() + ":" + i.Tag }

// ReadImage reads the tag of the image layout dir (named after its binary).
func ReadImage(dir string) (Image, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w (run: make chart-images)", dir, err)
	}
	var index struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return Image{}, fmt.Errorf("image %s: index.json: %w", dir, err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] == "" {
		return Image{}, fmt.Errorf("image %s: index.json does not name one tagged image", dir)
	}
	return Image{Dir: dir, Name: filepath.Base(dir), Tag: index.Manifests[0].Annotations["org.opencontainers.image.ref.name"]}, nil
}

// ChartValues are the --set flags of the install: the images (never pulled: the node has them),
// and the bundled etcd's members only preferred on distinct nodes, since the plane has one real
// node (the chart's hard anti-affinity would leave two of three members Pending). Everything
// else is the chart's default.
func ChartValues(server, etcd Image) []string {
	return []string{
		"image.repository=" + server.Repository(),
		"image.tag=" + server.Tag,
		"image.pullPolicy=Never",
		"etcd.bundled.image=" + etcd.Ref(),
		"etcd.bundled.pullPolicy=Never",
		"etcd.bundled.antiAffinity=soft",
	}
}

// chartMarker exists from the start of an install until its uninstall completed: stop and a
// start in the host mode know from it that the chart's objects are in the cluster. It holds the
// time the install began.
func (c Config) chartMarker() string { return filepath.Join(c.Out, "chart-release") }

// ChartInstalled reports whether an install may have left objects in the cluster.
func (c Config) ChartInstalled() bool {
	_, err := os.Stat(c.chartMarker())
	return err == nil
}

// ChartInstallStarted is when the recorded install began (its helm install).
func (c Config) ChartInstallStarted() (time.Time, error) {
	raw, err := os.ReadFile(c.chartMarker())
	if err != nil {
		return time.Time{}, err
	}
	return time.Parse(time.RFC3339Nano, strings.TrimSpace(string(raw)))
}

// ChartImages is where make chart-images puts the layouts.
func (c Config) ChartImages() string { return filepath.Join(c.Root, "_output/images") }

// ChartDir is the chart.
func (c Config) ChartDir() string { return filepath.Join(c.Root, "artifacts/charts", ChartRelease) }

// InstallChart imports the images into the node's containerd, installs the chart (or upgrades
// the release to it) and waits until its APIs are served.
func (p *Plane) InstallChart(ctx context.Context) error {
	for _, step := range []func(context.Context) error{p.installChart, p.waitAPIServices, p.waitOpenAPI} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// installChart is the start's step of the chart mode: the images, then helm upgrade --install,
// which waits until the release rolled out.
func (p *Plane) installChart(ctx context.Context) error {
	server, err := ReadImage(filepath.Join(p.Config.ChartImages(), "sandbox-apiserver"))
	if err != nil {
		return err
	}
	etcd, err := ReadImage(filepath.Join(p.Config.ChartImages(), "etcd"))
	if err != nil {
		return err
	}
	for _, img := range []Image{server, etcd} {
		if err := p.Config.ImportImage(ctx, img); err != nil {
			return err
		}
		p.Log("chart: imported %s into the node's containerd", img.Ref())
	}
	start := time.Now()
	if err := writeFile(p.Config.chartMarker(), []byte(start.UTC().Format(time.RFC3339Nano)+"\n")); err != nil {
		return err
	}
	args := []string{"upgrade", "--install", ChartRelease, p.Config.ChartDir(), "--namespace", ChartNamespace,
		"--create-namespace", "--wait", "--timeout", p.Config.ChartTimeout.String()}
	for _, v := range ChartValues(server, etcd) {
		args = append(args, "--set", v)
	}
	p.Log("chart: helm upgrade --install %s (%s, %s), waiting up to %s for its rollout",
		ChartRelease, server.Ref(), etcd.Ref(), seconds(p.Config.ChartTimeout))
	if err := p.Config.helm(ctx, args...); err != nil {
		p.describeChart(ctx)
		return err
	}
	p.Log("chart: %s rolled out in %s", ChartRelease, time.Since(start).Round(time.Second))
	return nil
}

// ImportImage imports the image layout into the node's containerd under img.Ref().
func (c Config) ImportImage(ctx context.Context, img Image) error {
	archive, err := os.CreateTemp("", "sandbox-image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(archive.Name())
	if err := tarDir(archive, img.Dir); err != nil {
		archive.Close()
		return fmt.Errorf("image %s: %w", img.Dir, err)
	}
	if err := archive.Close(); err != nil {
		return err
	}
	// --base-name turns the layout's tag into the full name. ctr warns on every call that cgroup
	// v1 is deprecated: its output is shown on failure only.
	out, err := exec.CommandContext(ctx, c.Tool("ctr"), "--address", c.ContainerdSock(), "--namespace", "k8s.io",
		"images", "import", "--base-name", img.Repository(), archive.Name()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w\n%s", img.Ref(), err, out)
	}
	return nil
}

// tarDir writes the files of dir into w as a tar archive, paths relative to dir.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// uninstallChart takes back what a chart install added: the sandbox objects (so the
// controllers, which still run, delete the pods, Services and volumes they made), the release,
// and the namespace with the etcd members' volumes (which the release leaves, by design). The
// images go with the node's containerd. When kube-apiserver cannot be reached it removes the
// cluster's state (the plane's etcd data) instead, which holds all the install made.
func (p *Plane) uninstallChart(ctx context.Context) {
	if !p.Config.ChartInstalled() {
		return
	}
	err := p.requireRunning("kube-apiserver", "")
	if err == nil {
		err = p.uninstallRelease(ctx)
	}
	if err == nil {
		return
	}
	p.Log("WARNING: chart: cannot uninstall it (%v); removing the cluster's state (%s) instead", err, p.rel(filepath.Join(p.Config.Data(), "etcd")))
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := p.StopComponent(name); err != nil {
			p.Log("WARNING: %v", err)
		}
	}
	if err := errors.Join(os.RemoveAll(filepath.Join(p.Config.Data(), "etcd")), os.Remove(p.Config.chartMarker())); err != nil {
		p.Log("WARNING: chart: %v", err)
	}
}

func (p *Plane) uninstallRelease(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.Config.ChartTimeout)
	defer cancel()
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	if err := p.deleteSandboxObjects(ctx, cl); err != nil {
		p.Log("chart: WARNING: %v; their children stay until the namespaces go", err)
	}
	if err := p.Config.helm(ctx, "uninstall", ChartRelease, "--namespace", ChartNamespace, "--ignore-not-found",
		"--wait", "--timeout", seconds(p.Config.ChartTimeout)); err != nil {
		return err
	}
	err = cl.kube.CoreV1().Namespaces().Delete(ctx, ChartNamespace, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := poll(ctx, p.pollInterval(), p.Config.ChartTimeout, func() (bool, error) {
		_, err := cl.kube.CoreV1().Namespaces().Get(ctx, ChartNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return fmt.Errorf("namespace %s not gone: %w", ChartNamespace, err)
	}
	p.Log("chart: %s uninstalled, namespace %s deleted with the etcd members' volumes", ChartRelease, ChartNamespace)
	return os.Remove(p.Config.chartMarker())
}

// sandboxResources are the kinds the server serves, users before what they use: claims and pools
// make sandboxes, templates serve all three.
var sandboxResources = []schema.GroupVersionResource{
	{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"},
	{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"},
	{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"},
	{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"},
}

// deleteSandboxObjects deletes every object of our kinds in every namespace and waits until
// none is left.
func (p *Plane) deleteSandboxObjects(ctx context.Context, cl *cluster) error {
	// Nothing can be deleted through APIs no server serves (its pods never became ready).
	if _, err := cl.dynamic.Resource(sandboxResources[0]).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("the sandbox APIs are not served (%w): no sandbox object deleted", err)
	}
	var errs []error
	for _, gvr := range sandboxResources {
		res := cl.dynamic.Resource(gvr)
		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(list.Items) == 0 {
			continue
		}
		p.Log("chart: deleting %d %s", len(list.Items), gvr.Resource)
		for _, o := range list.Items {
			if err := res.Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
		if err := poll(ctx, p.pollInterval(), p.Config.ChartTimeout, func() (bool, error) {
			l, err := res.List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, nil
		}); err != nil {
			errs = append(errs, fmt.Errorf("%s left: %w", gvr.Resource, err))
		}
	}
	return errors.Join(errs...)
}

// hostModeManifest: the file of artifacts/local holds what the chart installs in the chart mode
// (the server's Service, APIServices and RBAC), so the chart mode does not apply it.
func hostModeManifest(file string) bool {
	switch filepath.Base(file) {
	case "apiservices.yaml", "service.yaml", "rbac.yaml":
		return true
	}
	return false
}

// deleteHostModeObjects deletes what a start in the host mode applied from those manifests (the
// plane's etcd keeps it across make down), so that the chart can install its own; what the chart
// made (managed by Helm) stays.
func (p *Plane) deleteHostModeObjects(ctx context.Context, cl *cluster, manifests []string) error {
	for _, f := range manifests {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		objs, err := decodeManifests(data)
		if err != nil {
			return fmt.Errorf("%s: %w", p.rel(f), err)
		}
		for _, obj := range objs {
			res, _, err := cl.resource(ctx, obj)
			if err != nil {
				return err
			}
			cur, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && cur.GetLabels()["app.kubernetes.io/managed-by"] == "Helm") {
				continue
			}
			if err == nil {
				err = res.Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
			fmt.Fprintf(os.Stderr, "    %s %s deleted (the host mode's)\n", strings.ToLower(obj.GetKind()), obj.GetName())
		}
	}
	return nil
}

// helm runs the pinned helm against the plane, its output on stderr.
func (c Config) helm(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.Tool("helm"), append([]string{"--kubeconfig", c.AdminKubeconfig()}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("helm %s: %w", args[0], err)
	}
	return nil
}

// describeChart shows what the install's pods are doing, for a failed install.
func (p *Plane) describeChart(ctx context.Context) {
	cmd := exec.CommandContext(ctx, p.Config.Tool("kubectl"), "--kubeconfig", p.Config.AdminKubeconfig(),
		"--namespace", ChartNamespace, "get", "pods,pvc,events", "-o", "wide")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	_ = cmd.Run()
}

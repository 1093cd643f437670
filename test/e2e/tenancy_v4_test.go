// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClaimNeverGetsACollidingTemplatesMember (attack 27): warm members are labelled with a 32-bit
// hash of their template's name. An edit user makes a template whose name hashes as the tenants'
// template, with the attacker's image, and a warm pool of it. A claim-only tenant's claim of its
// own template is never handed the attacker's member: it gets a cold sandbox of its template,
// and the attacker's member stays in its pool.
func TestClaimNeverGetsACollidingTemplatesMember(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	_, client := adminClients(t)
	ctx := context.Background()
	tenant, editor := "tenant-"+randSuffix(5), "editor-"+randSuffix(5)
	grantTenant(t, ns, tenant)
	bindClusterRole(t, ns, editor, "edit")
	waitCanI(t, "create", "sandboxclaims.extensions.agents.x-k8s.io", "-n", ns, "--as="+tenant)
	waitCanI(t, "create", "sandboxwarmpools.extensions.agents.x-k8s.io", "-n", ns, "--as="+editor)
	victim, colliding := collidingNames(t)
	if nameHash(victim) != nameHash(colliding) {
		t.Fatalf("%s and %s do not collide", victim, colliding)
	}

	applyYAML(t, ns, fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/agent:latest}]}}
`, victim))
	kubectlAsStdin(t, "", fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/attacker:latest}]}}
---
`, colliding)+fmt.Sprintf(faultPool, "trap", 1, colliding), "create", "-n", ns, "-f", "-", "--as="+editor)
	var member string
	eventually(t, waitTimeout, "the attacker's pool's Ready member", func() (bool, string) {
		list, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%d sandboxes, %v", len(list.Items), err)
		}
		member = list.Items[0].Name
		for _, c := range list.Items[0].Status.Conditions {
			if c.Type == "Ready" && c.Status == metav1.ConditionTrue {
				return true, ""
			}
		}
		return false, member + " not Ready"
	})

	for _, claim := range []string{"mine", "mine-too"} {
		kubectlAsStdin(t, "", fmt.Sprintf(faultClaim, claim, victim), "create", "-n", ns, "-f", "-", "--as="+tenant)
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/"+claim, "--timeout=90s")
		if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", claim); got != claim {
			t.Errorf("claim %s got sandbox %q, want its own cold sandbox %s", claim, got, claim)
		}
		if image := jsonpath(t, ns, "{.spec.containers[0].image}", "pod", claim); image != "ghcr.io/example/agent:latest" {
			t.Errorf("claim %s's pod runs %q, want its template's image", claim, image)
		}
	}
	sb, err := client.AgentsV1beta1().Sandboxes(ns).Get(ctx, member, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(sb); ref == nil || ref.Kind != "SandboxWarmPool" || ref.Name != "trap" {
		t.Errorf("the attacker's member %s is now controlled by %v, want its pool trap", member, ref)
	}

	// The attacker's own claims of its template take its member, as honest claims of a pool do.
	kubectlAsStdin(t, "", fmt.Sprintf(faultClaim, "theirs", colliding), "create", "-n", ns, "-f", "-", "--as="+editor)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/theirs", "--timeout=90s")
	if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "theirs"); got != member {
		t.Errorf("the claim of the pool's own template got sandbox %q, want the member %s", got, member)
	}
}

// inflatingTar stands in for tar in a hostile sandbox: asked for an archive (-c), it sends, in
// three kilobytes, a PAX sparse entry of the name asked for that reads as a terabyte of zeros;
// anything else goes to the real tar.
const inflatingTar = `#!/usr/bin/python3
import os, sys
if not any(a.startswith("-c") for a in sys.argv[1:]):
    os.execv("/usr/bin/tar", ["tar"] + sys.argv[1:])
name = sys.argv[sys.argv.index("--") + 1]
def header(name, typ, size):
    b = bytearray(512)
    b[0:len(name)] = name.encode()
    b[100:124] = b"0000644\0" + b"0000000\0" + b"0000000\0"
    b[124:148] = b"%011o\0" % size + b"00000000000\0"
    b[156:157] = typ
    b[257:265] = b"ustar\x0000"
    b[148:156] = b" " * 8
    b[148:156] = b"%06o\0 " % sum(b)
    return bytes(b)
def block(p):
    return p + b"\0" * (-len(p) % 512)
records = b""
for kv in (b"GNU.sparse.map=0,5", b"GNU.sparse.numblocks=1", b"GNU.sparse.size=%d" % (1 << 40)):
    n = len(kv) + 3
    while len(b"%d %s\n" % (n, kv)) != n:
        n += 1
    records += b"%d %s\n" % (n, kv)
sys.stdout.buffer.write(header("PaxHeaders/" + name, b"x", len(records)) + block(records)
                        + header(name, b"0", 5) + block(b"hello") + b"\0" * 10240)
`

// TestCopyOutBoundedAgainstItsSandbox (attack 28): a claim-only tenant's own sandbox turns
// hostile. A file larger than --max-bytes is refused naming the bound and not written, and copies
// under the default bound; then the sandbox's tar answers with a sparse entry of a terabyte, which
// kubectl sandbox cp refuses without writing anything.
func TestCopyOutBoundedAgainstItsSandbox(t *testing.T) {
	t.Parallel()
	ns := newRealNamespace(t)
	applyHTTPTemplate(t, ns, "hostile")
	_, kc := newClaimTenant(t, ns)
	pluginOK(t, kc, "claim", "--template", "hostile", "--name", "mine", "--wait")
	pluginOK(t, kc, "exec", "mine", "--", "sh", "-c", "head -c 2097152 /dev/urandom > /tmp/two.bin")
	local := t.TempDir()

	bounded := filepath.Join(local, "bounded.bin")
	_, stderr, code := plugin(t, kc, "", "cp", "--max-bytes=1Mi", "mine:/tmp/two.bin", bounded)
	if code == 0 || !strings.Contains(stderr, "at most 1048576") {
		t.Errorf("cp past --max-bytes: exit code %d, stderr %q; want a failure naming the bound", code, stderr)
	}
	if _, err := os.Lstat(bounded); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file past the bound was written: %v", err)
	}
	pluginOK(t, kc, "cp", "mine:/tmp/two.bin", filepath.Join(local, "two.bin"))
	if info, err := os.Stat(filepath.Join(local, "two.bin")); err != nil || info.Size() != 2<<20 {
		t.Fatalf("the copy under the bound: %v, %v", info, err)
	}

	if _, stderr, code := plugin(t, kc, inflatingTar, "exec", "-i", "mine", "--", "sh", "-c", "cat > /usr/local/bin/tar && chmod +x /usr/local/bin/tar"); code != 0 {
		t.Fatalf("installing the sandbox's own tar: exit code %d\n%s", code, stderr)
	}
	inflated := filepath.Join(local, "inflated.bin")
	_, stderr, code = plugin(t, kc, "", "cp", "mine:/tmp/two.bin", inflated)
	if code == 0 || !strings.Contains(stderr, "sparse archive entry refused") {
		t.Errorf("cp of a sparse entry: exit code %d, stderr %q; want a failure naming the sparse entry", code, stderr)
	}
	if info, err := os.Lstat(inflated); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sparse entry was written: %v, %v", info, err)
	}
}

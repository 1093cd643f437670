// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// The examples claim real sandboxes, so they need a cluster: test/e2e's TestSDKExamples runs
// them against the local control plane, with SANDBOX_SDK_EXAMPLES=1 and KUBECONFIG naming a
// tenant whose namespace holds the template python-runtime-template and the warm pool
// python-pool, and whose sandboxes serve HTTP. Without SANDBOX_SDK_EXAMPLES they are compiled
// and not run.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("SANDBOX_SDK_EXAMPLES") == "" {
		skip := "^Example"
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			skip = prev + "|" + skip
		}
		_ = flag.Set("test.skip", skip)
	}
	os.Exit(m.Run())
}

// Claim a sandbox from a template, run a command in it and release it.
func Example() {
	// The kubeconfig (KUBECONFIG, or ~/.kube/config) says who the client is, and its context's
	// namespace is where the claim is made.
	kubeconfig := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil)
	config, err := kubeconfig.ClientConfig()
	if err != nil {
		log.Fatal(err)
	}
	namespace, _, err := kubeconfig.Namespace()
	if err != nil {
		log.Fatal(err)
	}
	client, err := sandbox.NewClient(config)
	if err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := client.Claim(ctx, namespace, sandbox.FromTemplate("python-runtime-template"))
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	res, err := sb.Run(ctx, "echo", "hello from the sandbox")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout)
	// Output: hello from the sandbox
}

// exampleClient is the client and namespace of the kubeconfig, as Example makes them.
func exampleClient() (*sandbox.Client, string) {
	kubeconfig := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil)
	config, err := kubeconfig.ClientConfig()
	if err != nil {
		log.Fatal(err)
	}
	namespace, _, err := kubeconfig.Namespace()
	if err != nil {
		log.Fatal(err)
	}
	client, err := sandbox.NewClient(config)
	if err != nil {
		log.Fatal(err)
	}
	return client, namespace
}

// Claim a member of a warm pool, with a label of your own and a time at which the server
// deletes the claim even if the program never does.
func ExampleClient_Claim() {
	client, namespace := exampleClient()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sb, err := client.Claim(ctx, namespace, sandbox.FromPool("python-pool"),
		sandbox.WithGenerateName("agent-"),
		sandbox.WithLabels(map[string]string{"team": "research"}),
		sandbox.WithShutdownTime(time.Now().Add(time.Hour)))
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	fmt.Println(strings.HasPrefix(sb.Name(), "agent-"), sb.SandboxName() != "")
	// Output: true true
}

// Run a command with its output streamed as it comes, and tell its exit code.
func ExampleSandbox_Exec() {
	client, namespace := exampleClient()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := client.Claim(ctx, namespace, sandbox.FromTemplate("python-runtime-template"))
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	var stderr bytes.Buffer
	err = sb.Exec(ctx, sandbox.ExecOptions{
		Command: []string{"sh", "-c", "echo working; echo almost done >&2; exit 3"},
		Stdout:  os.Stdout,
		Stderr:  &stderr,
	})
	var exit *sandbox.ExitError
	if !errors.As(err, &exit) && err != nil {
		log.Fatal(err)
	}
	fmt.Print("stderr: ", stderr.String())
	fmt.Println("exit code", sandbox.ExitCode(err))
	// Output:
	// working
	// stderr: almost done
	// exit code 3
}

// Write a file into the sandbox, read it back and list its directory.
func ExampleSandbox_WriteFile() {
	client, namespace := exampleClient()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := client.Claim(ctx, namespace, sandbox.FromTemplate("python-runtime-template"))
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	dir := path.Join("/tmp", sb.Name())
	if res, err := sb.Run(ctx, "mkdir", "-p", dir); err != nil || res.ExitCode != 0 {
		log.Fatal(err, res)
	}
	defer sb.Run(context.Background(), "rm", "-rf", dir)

	script := []byte("print('hello')\n")
	if err := sb.WriteFile(ctx, path.Join(dir, "main.py"), bytes.NewReader(script), int64(len(script)), 0o644); err != nil {
		log.Fatal(err)
	}
	f, err := sb.ReadFile(ctx, path.Join(dir, "main.py"))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(os.Stdout, f); err != nil {
		log.Fatal(err)
	}
	files, err := sb.ListFiles(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, file := range files {
		fmt.Println(file.Name, file.Size, file.Mode)
	}
	// Output:
	// print('hello')
	// main.py 15 -rw-r--r--
}

// Talk HTTP to the server in the sandbox, through the API server's proxy: no port-forward, no
// Service, the client's own credentials.
func ExampleSandbox_HTTPClient() {
	client, namespace := exampleClient()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := client.Claim(ctx, namespace, sandbox.FromTemplate("python-runtime-template"))
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	// "" is the first port the sandbox declares; the host of the URL is not used.
	httpClient, err := sb.HTTPClient("")
	if err != nil {
		log.Fatal(err)
	}
	resp, err := httpClient.Get("http://sandbox/healthz")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.TrimSpace(string(body)))
	// Output: 200 ok
}

// Forward a local port to the sandbox's port 8080 while the program talks to it.
func ExampleSandbox_PortForward() {
	client, namespace := exampleClient()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := client.Claim(ctx, namespace, sandbox.FromTemplate("python-runtime-template"))
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	forward, err := sb.PortForward(ctx, 0, 8080)
	if err != nil {
		log.Fatal(err)
	}
	defer forward.Close()
	fmt.Printf("http://127.0.0.1:%d/ reaches the sandbox's port 8080\n", forward.LocalPort())
}

// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/e2b"
)

// newE2BKeyCommand is `sandbox-apiserver e2b-key`: it makes an E2B API key acting as a user in
// one namespace, stores its hash in the keys namespace and prints the key, which is never
// stored.
func newE2BKeyCommand() *cobra.Command {
	var kubeconfig, keysNamespace, userName, namespace string
	var groups []string
	cmd := &cobra.Command{
		Use:   "e2b-key --user NAME --namespace NS",
		Short: "Make an API key for the E2B endpoint, acting as a Kubernetes user in one namespace",
		Long: `e2b-key makes an API key for the E2B endpoint (--e2b-bind-address). Every request made
with the key is authorized as --user (and --group) would be with kubectl; its sandboxes are the
SandboxClaims of --namespace. Only the key's SHA-256 is stored, as a Secret in
--e2b-api-keys-namespace (labelled ` + e2b.APIKeyLabel + `); the key is printed once.
Delete that Secret to revoke the key.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if userName == "" || namespace == "" {
				return errors.New("--user and --namespace are required")
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			key, id, err := e2b.CreateAPIKey(cmd.Context(), client, keysNamespace, &user.DefaultInfo{Name: userName, Groups: groups}, namespace)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key)
			fmt.Fprintf(cmd.ErrOrStderr(), "API key %s for user %q in namespace %s (revoke: kubectl delete secret -n %s e2b-key-%s)\n", id, userName, namespace, keysNamespace, id)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (with the right to create Secrets in the keys namespace); empty: KUBECONFIG or ~/.kube/config")
	fs.StringVar(&keysNamespace, "e2b-api-keys-namespace", e2b.NewOptions().KeysNamespace, "Namespace of the keys: the server's --e2b-api-keys-namespace.")
	fs.StringVar(&userName, "user", "", "Kubernetes user the key acts as.")
	fs.StringSliceVar(&groups, "group", nil, "Groups of that user (repeat or comma-separate).")
	fs.StringVar(&namespace, "namespace", "", "Namespace of the key's sandboxes (SandboxClaims).")
	return cmd
}

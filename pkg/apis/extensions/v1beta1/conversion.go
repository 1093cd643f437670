// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// The types embedded from agents.x-k8s.io convert with that group's generated functions.
// conversion-gen skips generated files when it scans other packages, so they are named here.

func Convert_v1beta1_PodTemplate_To_agents_PodTemplate(in *agentsv1beta1.PodTemplate, out *agents.PodTemplate, s conversion.Scope) error {
	return agentsv1beta1.Convert_v1beta1_PodTemplate_To_agents_PodTemplate(in, out, s)
}

func Convert_agents_PodTemplate_To_v1beta1_PodTemplate(in *agents.PodTemplate, out *agentsv1beta1.PodTemplate, s conversion.Scope) error {
	return agentsv1beta1.Convert_agents_PodTemplate_To_v1beta1_PodTemplate(in, out, s)
}

func Convert_v1beta1_PodMetadata_To_agents_PodMetadata(in *agentsv1beta1.PodMetadata, out *agents.PodMetadata, s conversion.Scope) error {
	return agentsv1beta1.Convert_v1beta1_PodMetadata_To_agents_PodMetadata(in, out, s)
}

func Convert_agents_PodMetadata_To_v1beta1_PodMetadata(in *agents.PodMetadata, out *agentsv1beta1.PodMetadata, s conversion.Scope) error {
	return agentsv1beta1.Convert_agents_PodMetadata_To_v1beta1_PodMetadata(in, out, s)
}

// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package adoption

import "github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/claimtest"

// The builders the claim's adoption tests share (pkg/util/claimtest), by their names here.
const testClaimUID = claimtest.ClaimUID

var (
	templateHash  = claimtest.TemplateHash
	poolHash      = claimtest.PoolHash
	newClaim      = claimtest.Claim
	withExtraMeta = claimtest.WithExtraMeta
	newTemplate   = claimtest.Template
)

// SPDX-License-Identifier: Apache-2.0
// The two decoders the checkpoint's AllocResp needs, without protobuf: a
// serialized v1beta1 ContainerAllocateResponse and Go's base64 for []byte.
#pragma once

#include <string>
#include <string_view>

#include "specshim/kubelet/types.h"

namespace specshim::kubelet {

// decode_allocate_response decodes a serialized v1beta1
// ContainerAllocateResponse (protobuf wire format). Unknown fields are
// skipped; truncated or malformed bytes throw Protocol.
AllocateResponse decode_allocate_response(std::string_view bytes);

// base64_decode decodes standard base64 (Go's encoding for []byte in JSON);
// throws Protocol on anything else.
std::string base64_decode(std::string_view text);

}  // namespace specshim::kubelet

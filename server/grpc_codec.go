package server

import (
	"bytes"
	"crypto/rand"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// GRPCServerOptions returns the options a *grpc.Server needs for the
// services of RegisterGRPC to answer every bad request INVALID_ARGUMENT:
// a codec under which a message that is not valid protobuf reaches the
// service instead of being refused by grpc-go itself. (grpc-go answers a
// message its codec cannot decode INTERNAL, "grpc: failed to unmarshal
// the received message", before any handler or interceptor runs.) Pass
// them to grpc.NewServer; `admit serve` does.
//
// Under this codec, a request that does not decode arrives as an empty
// message carrying the decoding error in an unknown field that only this
// process can write (its tag is the highest field number protobuf allows
// and its value starts with a random token made at start), and the
// services of this package answer it INVALID_ARGUMENT with the error.
// Other services on the same server (health, reflection) see an empty
// request instead of an error.
func GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ForceServerCodecV2(grpcCodec{encoding.GetCodecV2(encproto.Name)})}
}

// grpcMalformedField is the field number of the unknown field that marks
// a request that did not decode.
const grpcMalformedField = protowire.MaxValidNumber

// grpcMalformedToken starts the marker's value, so that no client can
// send a message that looks undecodable.
var grpcMalformedToken = func() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}()

// grpcCodec is protobuf, except that a message that does not decode is
// reset and marked (see GRPCServerOptions) rather than an error.
type grpcCodec struct{ encoding.CodecV2 }

func (c grpcCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	proto.Reset(m)
	msg := err.Error()
	if len(msg) > 256 {
		msg = msg[:256]
	}
	b := protowire.AppendTag(nil, grpcMalformedField, protowire.BytesType)
	b = protowire.AppendBytes(b, append(append([]byte(nil), grpcMalformedToken...), msg...))
	m.ProtoReflect().SetUnknown(b)
	return nil
}

// grpcMalformed returns INVALID_ARGUMENT if m is a request that did not
// decode (see grpcCodec), and nil otherwise.
func grpcMalformed(m proto.Message) error {
	u := m.ProtoReflect().GetUnknown()
	if len(u) == 0 {
		return nil
	}
	num, typ, n := protowire.ConsumeTag(u)
	if n < 0 || num != grpcMalformedField || typ != protowire.BytesType {
		return nil
	}
	v, k := protowire.ConsumeBytes(u[n:])
	if k < 0 || !bytes.HasPrefix(v, grpcMalformedToken) {
		return nil
	}
	return status.Error(codes.InvalidArgument, "malformed request: "+string(v[len(grpcMalformedToken):]))
}

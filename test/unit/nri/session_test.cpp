// SPDX-License-Identifier: Apache-2.0
// specshim/nri/session.h: one connection's session, serve() on one end of a
// socketpair in a thread of its own, the runtime played by the test on the
// other end, byte by byte as containerd writes and reads it, and a fake
// Service that records what it was asked (nri_test_support.h).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "error_of.h"
#include "test_support.h"
#include "specshim/base/error.h"
#include "specshim/nri/session.h"
#include "ttrpc.pb.h"

using namespace nri_test;
using namespace std::chrono_literals;

TEST_CASE("nri session: RegisterPlugin comes first, on connection 2 stream 1, with the Registration's name and index") {
  FakeService service;
  Registration reg;
  reg.index = "42";
  reg.timeout = 3s;
  Runtime runtime(service, reg);

  ttrpc::Request req = runtime.read_register_request();
  api::RegisterPluginRequest r;
  REQUIRE(r.ParseFromString(req.payload()));
  CHECK(r.plugin_name() == "specshim");
  CHECK(r.plugin_idx() == "42");
  CHECK(req.timeout_nano() == 3'000'000'000);
  CHECK(runtime.ended() == "the runtime closed the connection");
}

TEST_CASE("nri session: Configure before the RegisterPlugin reply is answered, then the reply is taken") {
  FakeService service;
  service.events = specshim::nri::event_bit(api::CREATE_CONTAINER) | specshim::nri::event_bit(api::REMOVE_CONTAINER);
  Registration reg;
  reg.timeout = 300ms;  // the registration deadline this test outlives
  Runtime runtime(service, reg);

  runtime.read_register_request();
  // containerd calls Configure as soon as it handled RegisterPlugin, before
  // its reply is on the wire.
  auto resp = runtime.call(1, "Configure", configure_request());
  auto configured = payload_of<api::ConfigureResponse>(resp);
  CHECK(configured.events() == (1 << 3 | 1 << 10));
  REQUIRE(service.configured().size() == 1);
  CHECK(service.configured()[0].runtime_name() == "containerd");
  CHECK(service.configured()[0].request_timeout() == 2000);

  runtime.write(go_write(2, ttrpc_message(1, kResponse, ok_response())));
  // Taken: serve would throw at the registration deadline (300 ms after it
  // started, the test below shows it does when no reply comes); it goes on.
  CHECK(runtime.still_serving_after(2 * reg.timeout));
  payload_of<api::CreateContainerResponse>(runtime.call(3, "CreateContainer", create_request("c1")));
  CHECK(runtime.ended() == "the runtime closed the connection");
}

TEST_CASE("nri session: a paged Synchronize gets more echoed and synchronized() gets every id once") {
  FakeService service;
  Runtime runtime(service);
  runtime.register_plugin();
  payload_of<api::ConfigureResponse>(runtime.call(1, "Configure", configure_request()));

  api::SynchronizeRequest first;
  *first.add_containers() = container("a");
  *first.add_containers() = container("b");
  first.add_pods()->set_id("pod-1");
  first.set_more(true);
  auto page1 = payload_of<api::SynchronizeResponse>(runtime.call(3, "Synchronize", first));
  CHECK(page1.more());
  CHECK(page1.update_size() == 0);
  CHECK(service.synced().empty());

  api::SynchronizeRequest last;
  *last.add_containers() = container("c");
  last.set_more(false);
  auto page2 = payload_of<api::SynchronizeResponse>(runtime.call(5, "Synchronize", last));
  CHECK_FALSE(page2.more());
  REQUIRE(service.synced().size() == 1);
  CHECK(service.synced()[0] == std::vector<std::string>{"a", "b", "c"});
  CHECK(runtime.ended() == "the runtime closed the connection");
  CHECK(service.synced().size() == 1);
}

TEST_CASE("nri session: an unpaged Synchronize with no containers still calls synchronized()") {
  FakeService service;
  Runtime runtime(service);
  runtime.register_plugin();
  auto resp = payload_of<api::SynchronizeResponse>(runtime.call(1, "Synchronize", api::SynchronizeRequest()));
  CHECK_FALSE(resp.more());
  REQUIRE(service.synced().size() == 1);
  CHECK(service.synced()[0].empty());
}

TEST_CASE("nri session: CreateContainer's reply carries the Service's adjustment") {
  FakeService service;
  auto* env = service.adjustment.mutable_adjust()->add_env();
  env->set_key("NVIDIA_VISIBLE_DEVICES");
  env->set_value("void");
  (*service.adjustment.mutable_adjust()->mutable_annotations())["specshim.io/applied"] = "gpu";
  auto* dev = service.adjustment.mutable_adjust()->mutable_linux()->add_devices();
  dev->set_path("/dev/nvidia0");
  dev->set_type("c");
  dev->set_major(195);
  Runtime runtime(service);
  runtime.register_plugin();

  auto resp = payload_of<api::CreateContainerResponse>(runtime.call(1, "CreateContainer", create_request("c1")));
  REQUIRE(resp.adjust().env_size() == 1);
  CHECK(resp.adjust().env(0).key() == "NVIDIA_VISIBLE_DEVICES");
  CHECK(resp.adjust().env(0).value() == "void");
  CHECK(resp.adjust().annotations().at("specshim.io/applied") == "gpu");
  REQUIRE(resp.adjust().linux().devices_size() == 1);
  CHECK(resp.adjust().linux().devices(0).path() == "/dev/nvidia0");
  CHECK(resp.adjust().linux().devices(0).major() == 195);
  CHECK(service.created() == std::vector<std::string>{"c1"});
}

TEST_CASE("nri session: a Service throwing specshim::Error fails the call with code 9 and its message") {
  FakeService service;
  service.fail_create = "resolve device `gpu=7`: no such device";
  Runtime runtime(service);
  runtime.register_plugin();

  auto resp = runtime.call(1, "CreateContainer", create_request("c1"));
  CHECK(resp.status().code() == 9);
  CHECK(resp.status().message() == "resolve device `gpu=7`: no such device");
  CHECK(resp.payload().empty());
  // The session goes on.
  payload_of<api::ConfigureResponse>(runtime.call(3, "Configure", configure_request()));
  CHECK(runtime.ended() == "the runtime closed the connection");
}

TEST_CASE("nri session: a Service throwing an RpcStatus fails the call with that code") {
  FakeService service;
  service.fail_create_status = specshim::nri::RpcStatus{specshim::nri::kResourceExhausted, "too many"};
  Runtime runtime(service);
  runtime.register_plugin();
  auto resp = runtime.call(1, "CreateContainer", create_request("c1"));
  CHECK(resp.status().code() == 8);
  CHECK(resp.status().message() == "too many");
}

TEST_CASE("nri session: a Service throwing what is no std::exception fails the call with code 2, the next is served") {
  FakeService service;
  service.fail_create_unknown = true;
  Runtime runtime(service);
  runtime.register_plugin();
  auto resp = runtime.call(1, "CreateContainer", create_request("c1"));
  CHECK(resp.status().code() == 2);
  CHECK(resp.status().message() == "CreateContainer: unknown error");
  CHECK(resp.payload().empty());
  payload_of<api::ConfigureResponse>(runtime.call(3, "Configure", configure_request()));
  CHECK(runtime.ended() == "the runtime closed the connection");
}

TEST_CASE("nri session: an unknown method gives 12 method Foo, an unknown service 12 service X") {
  FakeService service;
  Runtime runtime(service);
  runtime.register_plugin();

  auto method = runtime.call(1, "Foo", api::Empty());
  CHECK(method.status().code() == 12);
  CHECK(method.status().message() == "method Foo");

  auto svc = runtime.call(3, "Configure", configure_request(), "nri.pkg.api.v1alpha1.Other");
  CHECK(svc.status().code() == 12);
  CHECK(svc.status().message() == "service nri.pkg.api.v1alpha1.Other");
  CHECK(service.configured().empty());
}

TEST_CASE("nri session: the other Plugin calls are answered and removals reach the Service") {
  FakeService service;
  Runtime runtime(service);
  runtime.register_plugin();

  api::RemoveContainerRequest remove;
  *remove.mutable_container() = container("r1");
  payload_of<api::RemoveContainerResponse>(runtime.call(1, "RemoveContainer", remove));

  api::StateChangeEvent removed;
  removed.set_event(api::REMOVE_CONTAINER);
  *removed.mutable_container() = container("r2");
  payload_of<api::Empty>(runtime.call(3, "StateChange", removed));

  api::StateChangeEvent started;
  started.set_event(api::START_CONTAINER);
  *started.mutable_container() = container("s1");
  payload_of<api::Empty>(runtime.call(5, "StateChange", started));

  api::StopContainerRequest stop;
  *stop.mutable_container() = container("s1");
  payload_of<api::StopContainerResponse>(runtime.call(7, "StopContainer", stop));
  api::UpdateContainerRequest update;
  *update.mutable_container() = container("s1");
  payload_of<api::UpdateContainerResponse>(runtime.call(9, "UpdateContainer", update));
  payload_of<api::Empty>(runtime.call(11, "Shutdown", api::Empty()));

  CHECK(service.removed() == std::vector<std::string>{"r1", "r2"});
  CHECK(runtime.ended() == "the runtime closed the connection");
}

TEST_CASE("nri session: a request that does not decode is answered with code 3") {
  FakeService service;
  Runtime runtime(service);
  runtime.register_plugin();
  runtime.write(go_write(1, ttrpc_message(1, kRequest, "\xff\xff\xff")));
  CHECK(runtime.read_response(1).status().code() == 3);

  ttrpc::Request bad;
  bad.set_service(kPluginService);
  bad.set_method("CreateContainer");
  bad.set_payload("\x0a\xff");  // field 1, a length running past the end
  runtime.write(go_write(1, ttrpc_message(3, kRequest, bad.SerializeAsString())));
  auto resp = runtime.read_response(3);
  CHECK(resp.status().code() == 3);
  CHECK(resp.status().message() == "cannot decode the CreateContainer request");
  CHECK(service.created().empty());
}

TEST_CASE("nri session: a request over 4 MiB is answered with code 8 and the next one is served") {
  FakeService service;
  Runtime runtime(service);
  runtime.register_plugin();

  // A length over ttRPC's limit, with all its data, in Go's [4096][rest].
  const std::uint32_t size = (4u << 20) + 1;
  std::string big = ttrpc_header(size, 1, kRequest) + std::string(size, 'x');
  runtime.write(go_write(1, big));
  auto resp = runtime.read_response(1);
  CHECK(resp.status().code() == 8);

  payload_of<api::ConfigureResponse>(runtime.call(3, "Configure", configure_request()));
  CHECK(runtime.ended() == "the runtime closed the connection");
}

TEST_CASE("nri session: frames for an unknown connection id are dropped") {
  FakeService service;
  Runtime runtime(service);
  runtime.register_plugin();

  // Bytes on connection 7 that would be a broken ttRPC stream, then a whole
  // CreateContainer request there: neither is read.
  runtime.write(mux(7, std::string(12, '\xff')));
  runtime.write(mux(7, ttrpc_message(1, kRequest, request("CreateContainer", create_request("c7")))));
  auto resp = runtime.call(1, "Configure", configure_request());  // the next message out is this answer
  payload_of<api::ConfigureResponse>(resp);
  CHECK(service.created().empty());
  CHECK(service.configured().size() == 1);
  CHECK(runtime.ended() == "the runtime closed the connection");
}

TEST_CASE("nri session: a RegisterPlugin reply with a non-zero status makes serve throw with its message") {
  FakeService service;
  Runtime runtime(service);
  runtime.read_register_request();
  ttrpc::Response refused;
  refused.mutable_status()->set_code(9);
  refused.mutable_status()->set_message("plugin index 10 is taken");
  runtime.write(go_write(2, ttrpc_message(1, kResponse, refused.SerializeAsString())));

  std::string what = specshim::test::error_of<specshim::Error>([&] { runtime.outcome(); });
  CHECK_THAT(what, Catch::Contains("plugin index 10 is taken"));
  CHECK_THAT(what, Catch::Contains("RegisterPlugin"));
}

TEST_CASE("nri session: an unanswered RegisterPlugin makes serve throw at the Registration's timeout") {
  FakeService service;
  Registration reg;
  reg.timeout = 100ms;
  Runtime runtime(service, reg);
  runtime.read_register_request();
  std::string what = specshim::test::error_of<specshim::Error>([&] { runtime.outcome(); });
  CHECK_THAT(what, Catch::Contains("RegisterPlugin: no answer within 100 ms"));
}

TEST_CASE("nri session: the runtime hanging up makes serve return") {
  FakeService service;
  Runtime runtime(service);

  SECTION("before answering RegisterPlugin") {
    runtime.read_register_request();
    CHECK(runtime.ended() == "the runtime closed the connection");
  }
  SECTION("after a call") {
    runtime.register_plugin();
    payload_of<api::ConfigureResponse>(runtime.call(1, "Configure", configure_request()));
    CHECK(runtime.ended() == "the runtime closed the connection");
  }
  SECTION("in the middle of a message") {
    runtime.register_plugin();
    std::string message = ttrpc_message(1, kRequest, request("Configure", configure_request()));
    runtime.write(mux(1, message.substr(0, message.size() / 2)));
    CHECK(runtime.ended() == "the runtime closed the connection in the middle of a message");
  }
  CHECK(service.created().empty());
}

TEST_CASE("nri session: a reply over 4096 bytes comes back as exactly two mux frames [4096][rest]") {
  FakeService service;
  auto* env = service.adjustment.mutable_adjust()->add_env();
  env->set_key("BIG");
  env->set_value(std::string(20'000, 'e'));
  Runtime runtime(service);
  runtime.register_plugin();

  runtime.write(go_write(1, ttrpc_message(3, kRequest, request("CreateContainer", create_request("c1")))));

  // The raw bytes on the socket: header, 4096 bytes, header, the rest.
  std::string h1 = runtime.read_exact(8);
  CHECK(from_be32(h1) == 1);
  REQUIRE(from_be32(std::string_view(h1).substr(4)) == 4096);
  std::string part1 = runtime.read_exact(4096);
  std::string h2 = runtime.read_exact(8);
  CHECK(from_be32(h2) == 1);
  std::uint32_t rest = from_be32(std::string_view(h2).substr(4));
  std::string part2 = runtime.read_exact(rest);

  std::string message = part1 + part2;
  REQUIRE(from_be32(message) == message.size() - 10);  // the whole ttRPC message, no more
  CHECK(from_be32(std::string_view(message).substr(4)) == 3);
  CHECK(message[8] == kResponse);
  CHECK(message[9] == 0);
  ttrpc::Response resp;
  REQUIRE(resp.ParseFromString(message.substr(10)));
  auto created = payload_of<api::CreateContainerResponse>(resp);
  REQUIRE(created.adjust().env_size() == 1);
  CHECK(created.adjust().env(0).value() == std::string(20'000, 'e'));

  // Nothing else came between: the next frame is the next call's answer.
  payload_of<api::ConfigureResponse>(runtime.call(5, "Configure", configure_request()));
  CHECK(runtime.ended() == "the runtime closed the connection");
}

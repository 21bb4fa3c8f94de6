// The C++ counterpart of examples/installed.c: the same round trip (start, get_state, one
// prompt to completion, close) against an installed omprpc, found with
// `pkg-config --cflags --libs omprpc`, with the handle and strings owned by RAII wrappers.
//
//   installed-cpp AGENT        Prints "installed-cpp: PASS ..." and exits 0 on success.
#include <omprpc.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

struct StringFree {
    void operator()(char *s) const { omprpc_string_free(s); }
};
using OwnedString = std::unique_ptr<char, StringFree>;

struct ClientFree {
    void operator()(omprpc_client *c) const { omprpc_client_free(c); }
};
using Client = std::unique_ptr<omprpc_client, ClientFree>;

// Turns a failed call into an exception carrying the status name and the error JSON.
void check(const char *what, omprpc_status st, char *err) {
    OwnedString owned(err);
    if (st != OMPRPC_STATUS_OK) {
        throw std::runtime_error(std::string(what) + ": " + omprpc_status_name(static_cast<int>(st)) + " " +
                                 (owned ? owned.get() : ""));
    }
}

std::string take(char *s) {
    OwnedString owned(s);
    return owned ? std::string(owned.get()) : std::string();
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s AGENT\n", argv[0]);
        return 2;
    }
    const std::string agent = argv[1];
    if (agent.find_first_of("\"\\") != std::string::npos) {
        std::fprintf(stderr, "installed-cpp: the agent path needs JSON escaping\n");
        return 2;
    }
    try {
        if (omprpc_abi_version() != OMPRPC_ABI_VERSION || std::string(omprpc_version()) != OMPRPC_VERSION_STRING) {
            throw std::runtime_error(std::string("header ") + OMPRPC_VERSION_STRING + " but library " + omprpc_version());
        }
        const std::string options = "{\"command\":[\"" + agent + "\"]}";
        char *err = nullptr;
        omprpc_client *raw = nullptr;
        check("start", omprpc_client_start(options.c_str(), &raw, &err), err);
        Client client(raw);

        char *out = nullptr;
        err = nullptr;
        check("get_state", omprpc_client_request(client.get(), "get_state", nullptr, OMPRPC_TIMEOUT_DEFAULT, &out, &err), err);
        const std::string state = take(out);

        out = nullptr;
        err = nullptr;
        check("prompt_and_wait", omprpc_client_prompt_and_wait(client.get(), "ping", nullptr, 30000, &out, &err), err);
        const std::string turn = take(out);

        err = nullptr;
        check("close", omprpc_client_close(client.get(), &err), err);

        if (state.find("\"sessionId\"") == std::string::npos || turn.find("\"assistantText\":\"pong\"") == std::string::npos) {
            throw std::runtime_error("unexpected answers: state " + state + " turn " + turn.substr(0, 300));
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "installed-cpp: %s\n", e.what());
        return 1;
    }
    std::printf("installed-cpp: PASS (omprpc %s, ABI %u)\n", omprpc_version(), omprpc_abi_version());
    return 0;
}

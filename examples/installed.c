/*
 * A C program built against an *installed* omprpc (make install-test builds it with
 * `pkg-config --cflags --libs omprpc`, then again with `--static`): starts the agent given
 * on the command line, asks for its state, runs one prompt to completion, and closes.
 *
 *   installed AGENT [ARG...]      (make install-test passes the fake agent)
 *
 * Prints "installed-c: PASS ..." and exits 0 when the round trip worked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omprpc.h>

static int fail(const char *what, omprpc_status st, char *err) {
    fprintf(stderr, "installed-c: %s failed: %s %s\n", what, omprpc_status_name((int)st), err ? err : "");
    omprpc_string_free(err);
    return 1;
}

int main(int argc, char **argv) {
    char options[4096];
    omprpc_client *client = NULL;
    char *err = NULL, *state = NULL, *turn = NULL;
    omprpc_status st;
    int n;

    if (argc != 2) {
        fprintf(stderr, "usage: %s AGENT\n", argv[0]);
        return 2;
    }
    /* The header this was compiled with and the library it loaded must agree. */
    if (omprpc_abi_version() != OMPRPC_ABI_VERSION || strcmp(omprpc_version(), OMPRPC_VERSION_STRING) != 0) {
        fprintf(stderr, "installed-c: header %s (ABI %d) but library %s (ABI %u)\n", OMPRPC_VERSION_STRING,
                OMPRPC_ABI_VERSION, omprpc_version(), omprpc_abi_version());
        return 1;
    }
    /* The agent path is used as a JSON string as is: the test passes a plain path. */
    n = snprintf(options, sizeof options, "{\"command\":[\"%s\"]}", argv[1]);
    if (n < 0 || (size_t)n >= sizeof options || strpbrk(argv[1], "\"\\")) {
        fprintf(stderr, "installed-c: agent path too long or needs JSON escaping\n");
        return 2;
    }

    st = omprpc_client_start(options, &client, &err);
    if (st != OMPRPC_STATUS_OK) return fail("start", st, err);

    st = omprpc_client_request(client, "get_state", NULL, OMPRPC_TIMEOUT_DEFAULT, &state, &err);
    if (st != OMPRPC_STATUS_OK) {
        omprpc_client_free(client);
        return fail("get_state", st, err);
    }
    st = omprpc_client_prompt_and_wait(client, "ping", NULL, 30000, &turn, &err);
    if (st != OMPRPC_STATUS_OK) {
        omprpc_string_free(state);
        omprpc_client_free(client);
        return fail("prompt_and_wait", st, err);
    }
    st = omprpc_client_close(client, &err);
    omprpc_client_free(client);
    if (st != OMPRPC_STATUS_OK) {
        omprpc_string_free(state);
        omprpc_string_free(turn);
        return fail("close", st, err);
    }

    /* The fake agent's state names its session; its default turn says "pong". */
    if (!strstr(state, "\"sessionId\"") || !strstr(turn, "\"assistantText\":\"pong\"")) {
        fprintf(stderr, "installed-c: unexpected answers:\n  state %s\n  turn %.300s\n", state, turn);
        omprpc_string_free(state);
        omprpc_string_free(turn);
        return 1;
    }
    printf("installed-c: PASS (omprpc %s, ABI %u)\n", omprpc_version(), omprpc_abi_version());
    omprpc_string_free(state);
    omprpc_string_free(turn);
    return 0;
}

/*
 * The embedder helpers through the C API: the tool-parameter schema sanitizer
 * (omprpc_sanitize_schema and the sanitize_tool_schemas start option) and the skills filter
 * (omprpc_skills_flags and the skills start option), with their argument checks.
 */
#include "harness.h"

/* A pydantic-style schema: a $ref with a description beside it, an Optional union. */
static const char *SCHEMA =
    "{\"type\":\"object\",\"$defs\":{\"Point\":{\"type\":\"object\",\"description\":\"a point\","
    "\"properties\":{\"x\":{\"type\":\"number\",\"default\":0}},\"additionalProperties\":false}},"
    "\"properties\":{\"at\":{\"$ref\":\"#/$defs/Point\",\"description\":\"where\"},"
    "\"label\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"string\"}],\"description\":\"a label\"}}}";

static void test_sanitize_schema(void) {
    char *out = NULL, *err = NULL;
    if (CHECK_OK(omprpc_sanitize_schema(SCHEMA, NULL, &out, &err), err)) {
        jval *r = PARSE(out);
        CHECK_STR(jpath_str(r, "schema.properties.at.type"), "object");
        CHECK_STR(jpath_str(r, "schema.properties.at.description"), "where");
        CHECK_STR(jpath_str(r, "schema.properties.at.properties.x.type"), "number");
        CHECK(jpath(r, "schema.properties.at.properties.x.default") == NULL);
        CHECK(jpath(r, "schema.properties.at.additionalProperties") == NULL);
        CHECK(jpath(r, "schema.$defs") == NULL);
        CHECK_STR(jpath_str(r, "schema.properties.label.type"), "string");
        CHECK_STR(jpath_str(r, "schema.properties.label.description"), "a label");
        /* $defs, Point's additionalProperties and default, the null branch. */
        CHECKF(jlen(jget(r, "dropped")) == 4, "%zu dropped", jlen(jget(r, "dropped")));
        json_free(r);
        h_strfree(&out);
    }
    CHECK_STATUS(omprpc_sanitize_schema(SCHEMA, "{\"max_nodes\":2}", &out, &err), OMPRPC_STATUS_LIMIT_EXCEEDED, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_sanitize_schema("{\"$ref\":\"#\"}", NULL, &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    {
        char buf[512];
        const char *msg = h_err_field(err, "message", buf, sizeof buf);
        CHECKF(msg && strstr(msg, "recursive"), "message: %s", msg ? msg : "(none)");
    }
    h_strfree(&err);
    CHECK_STATUS(omprpc_sanitize_schema("{\"a\":", NULL, &out, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_sanitize_schema("[]", NULL, &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_sanitize_schema(SCHEMA, "{\"depth\":1}", &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_sanitize_schema(NULL, NULL, &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_sanitize_schema(SCHEMA, NULL, NULL, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    /* No out_error: the status alone. */
    CHECK(omprpc_sanitize_schema("\xff", NULL, &out, NULL) == OMPRPC_STATUS_INVALID_UTF8);
    CHECK(out == NULL);
}

static void test_skills_flags(void) {
    char *out = NULL, *err = NULL;
    if (CHECK_OK(omprpc_skills_flags("{\"flavor\":\"pi\",\"agent_version\":\"0.73.1\",\"skills\":[\"/s/alpha\"],\"tools\":[\"echo\"]}", &out, &err), err)) {
        jval *r = PARSE(out);
        CHECK_STR(jpath_str(r, "flags.0"), "--no-skills");
        CHECK_STR(jpath_str(r, "flags.1"), "--skill");
        CHECK_STR(jpath_str(r, "flags.2"), "/s/alpha");
        CHECK(jbool(jget(r, "needs_read")) == 1);
        CHECK_STR(jpath_str(r, "tools.1"), "read");
        json_free(r);
        h_strfree(&out);
    }
    if (CHECK_OK(omprpc_skills_flags("{\"flavor\":\"omp\",\"skills\":[\"git-*\",\"docker\"]}", &out, &err), err)) {
        jval *r = PARSE(out);
        CHECK_STR(jpath_str(r, "flags.0"), "--skills=git-*,docker");
        CHECK(jlen(jget(r, "flags")) == 1);
        CHECK(jis(jget(r, "tools"), J_NULL));
        json_free(r);
        h_strfree(&out);
    }
    CHECK_STATUS(omprpc_skills_flags("{\"flavor\":\"pi\",\"skills\":[\"alpha\"]}", &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_skills_flags("{\"flavor\":\"pi\",\"skills\":\"all\",\"agent_version\":\"new\"}", &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_skills_flags("{\"skills\":\"all\"}", &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_skills_flags("[\"all\"]", &out, &err), OMPRPC_STATUS_INVALID_JSON, err);
    h_strfree(&err);
    CHECK_STATUS(omprpc_skills_flags(NULL, &out, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
    h_strfree(&err);
    CHECK(out == NULL);
}

/* The start options: skills flags reach the spawned argv; the host tools reach the agent
 * sanitized (the recording shows what was sent). */
static void test_start_options(void) {
    char path[512], rec[600], extra[2048], *info = NULL, *err = NULL;
    omprpc_client *c;
    if (!plat_make_temp_dir("omprpc-c-schema", path, sizeof path)) {
        CHECKF(0, "cannot make a temp dir");
        return;
    }
    snprintf(rec, sizeof rec, "%s/s.jsonl", path);
    snprintf(extra, sizeof extra,
             "\"skills\":\"none\",\"sanitize_tool_schemas\":true,\"record_path\":\"%s\","
             "\"host_tools\":[{\"name\":\"mark\",\"description\":\"Mark\",\"parameters\":%s}]", rec, SCHEMA);
    c = START(NULL, extra);
    if (!c) return;
    if (CHECK_OK(omprpc_client_info(c, &info, &err), err)) {
        jval *i = PARSE(info);
        CHECK_STR(jpath_str(i, "argv.1"), "--no-skills");
        json_free(i);
        h_strfree(&info);
    }
    omprpc_client_free(c);
    {
        FILE *f = fopen(rec, "r");
        char line[16384];
        int found = 0;
        CHECKF(f != NULL, "no recording at %s", rec);
        while (f && fgets(line, sizeof line, f)) {
            jval *v = json_parse(line);
            if (v && jpath_str(v, "frame.type") && !strcmp(jpath_str(v, "frame.type"), "set_host_tools")) {
                found++;
                CHECK_STR(jpath_str(v, "frame.tools.0.parameters.properties.at.description"), "where");
                CHECK(jpath(v, "frame.tools.0.parameters.$defs") == NULL);
                CHECK(jpath(v, "frame.tools.0.parameters.properties.at.$ref") == NULL);
            }
            json_free(v);
        }
        if (f) fclose(f);
        CHECKF(found == 1, "%d set_host_tools frames", found);
    }
    remove(rec);
    rmdir(path);
    /* A contradiction and a recursive tool schema fail start, with nothing left running. */
    {
        char *opts = h_opts(NULL, "\"skills\":[\"a\"],\"no_skills\":true");
        CHECK_STATUS(omprpc_client_start(opts, &c, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        h_strfree(&err);
        free(opts);
        opts = h_opts(NULL, "\"sanitize_tool_schemas\":true,\"host_tools\":[{\"name\":\"t\",\"description\":\"T\",\"parameters\":{\"$ref\":\"#\"}}]");
        CHECK_STATUS(omprpc_client_start(opts, &c, &err), OMPRPC_STATUS_INVALID_ARGUMENT, err);
        h_strfree(&err);
        free(opts);
    }
}

int main(void) {
    h_init();
    RUN(test_sanitize_schema);
    RUN(test_skills_flags);
    RUN(test_start_options);
    return h_summary();
}

package io.grantlog;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * A client of the grantlog decision service ({@code grantlog serve}) for JVM platforms: what an
 * authorizer plugin of Apache Gravitino or CDAP calls. Java 17, {@code java.net.http} only, no
 * third-party jars (a small JSON reader and writer are in {@link Json}).
 *
 * <pre>{@code
 * GrantlogClient c = new GrantlogClient(URI.create("http://127.0.0.1:8181"), token);
 * Decision d = c.check("alice", "load_table", "m1.lakehouse.sales.orders");
 * if (!d.allowed()) throw new ForbiddenException(d.toString());
 * }</pre>
 *
 * The client keeps the highest revision it wrote or saw and sends it as
 * {@code at_least_revision}, so its reads include its own writes whichever worker answers. A
 * failure to reach the service, an error answer, or an answer that is not the service's JSON
 * (a proxy's HTML error page) throws {@link GrantlogException}: the caller must deny (fail
 * closed). The base URL may carry a path prefix ({@code https://gw.example/grantlog}): the
 * endpoints are resolved under it.
 *
 * <p>A constant that no rule, declaration or fact of the served model mentions (a typo such
 * as {@code load_tabel}) is denied and reported: the {@link Decision}'s
 * {@link Decision#warnings()} hold {@code unknown-constant}; a server started with
 * {@code --strict} answers 422 instead, thrown as a {@link GrantlogException} whose
 * {@link GrantlogException#code()} is {@code unknown-constant}.
 */
public final class GrantlogClient {
    /**
     * One decision: allowed or not, the rules that decided it, the facts' revision, and what
     * the service reported about it ({@code unknown-constant}; in a batch, the error that made
     * an item fail closed).
     */
    public record Decision(boolean allowed, List<String> reasons, long revision,
                           List<Warning> warnings) {
        /** Did the service report {@code code} about this decision? */
        public boolean warned(String code) {
            for (Warning w : warnings) if (w.code().equals(code)) return true;
            return false;
        }
    }

    /** A code ({@code unknown-constant}) and a message the service attached to a decision. */
    public record Warning(String code, String message) {}

    /**
     * One transaction's gained and lost rows of a watched relation (from the watch feed); or,
     * with {@code at} (an ISO 8601 time; null for a transaction), those of the moment a fact's
     * validity interval started or ended, at the same revision.
     */
    public record Change(long revision, String relation, List<List<Object>> gained,
                         List<List<Object>> lost, String at) {}

    /** An error answer (4xx/5xx) or an unreachable service. */
    public static final class GrantlogException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final int status;
        private final String code;

        GrantlogException(int status, String code, String message) {
            super(code + ": " + message);
            this.status = status;
            this.code = code;
        }

        public int status() { return status; }

        public String code() { return code; }
    }

    private final HttpClient http;
    private final URI base;
    private final String token;
    private volatile long revision;

    public GrantlogClient(URI base, String token) {
        this.base = base;
        this.token = token;
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10))
                .version(HttpClient.Version.HTTP_1_1).build();
    }

    /** The highest revision this client wrote or saw. */
    public long revision() { return revision; }

    private void seen(long rev) {
        if (rev > revision) revision = rev;
    }

    /** {@code path} under the base URL, its path prefix kept ({@code URI.resolve} of an
     * absolute path would drop it). */
    private URI endpoint(String path) {
        String b = base.toString();
        int cut = b.length();
        while (cut > 0 && b.charAt(cut - 1) == '/') cut--;
        return URI.create(b.substring(0, cut) + path);
    }

    private static String encode(String v) {
        return URLEncoder.encode(v, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private HttpRequest.Builder request(String path) {
        HttpRequest.Builder b = HttpRequest.newBuilder(endpoint(path))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json");
        if (token != null) b.header("Authorization", "Bearer " + token);
        return b;
    }

    private Map<String, Object> post(String path, Map<String, Object> body) {
        HttpRequest req = request(path)
                .POST(HttpRequest.BodyPublishers.ofString(Json.write(body))).build();
        HttpResponse<String> resp;
        try {
            resp = http.send(req, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new GrantlogException(0, "service-unavailable", e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GrantlogException(0, "interrupted", e.toString());
        }
        return answer(resp.statusCode(), resp.body());
    }

    /**
     * The JSON object of an answer; an error status throws with the service's code and
     * message, or, when the body is not the service's JSON (a proxy's HTML page),
     * {@code http-STATUS} with the start of the body; a success that is not a JSON object
     * throws {@code bad-response}.
     */
    private static Map<String, Object> answer(int status, String text) {
        Object parsed;
        try {
            parsed = Json.read(text);
        } catch (IllegalArgumentException e) {
            if (status >= 400) {
                throw new GrantlogException(status, "http-" + status, "the server answered "
                        + status + " with a body that is not JSON: " + excerpt(text));
            }
            throw new GrantlogException(status, "bad-response", "the answer is not JSON ("
                    + e.getMessage() + "): " + excerpt(text));
        }
        if (!(parsed instanceof Map)) {
            throw new GrantlogException(status, status >= 400 ? "http-" + status : "bad-response",
                    "the answer is not a JSON object: " + excerpt(text));
        }
        Map<String, Object> out = Json.object(parsed);
        if (status >= 400) {
            Map<String, Object> err = Json.object(out.get("error"));
            Object code = err.get("code");
            Object message = err.get("message");
            throw new GrantlogException(status,
                    code instanceof String c ? c : "http-" + status,
                    message instanceof String m ? m : "the server answered " + status);
        }
        return out;
    }

    private static String excerpt(String text) {
        String t = text.strip().replaceAll("\\s+", " ");
        return t.length() > 200 ? t.substring(0, 200) + "..." : t;
    }

    /** A number field of an answer; {@code bad-response} when it is missing. */
    private static long number(Map<String, Object> m, String key) {
        if (m.get(key) instanceof Number n) return n.longValue();
        throw new GrantlogException(200, "bad-response", "the answer has no `" + key + "`");
    }

    private static Decision decision(Map<String, Object> m, long revision) {
        List<String> reasons = new ArrayList<>();
        for (Object r : Json.array(m.get("reasons"))) reasons.add(String.valueOf(r));
        List<Warning> warnings = new ArrayList<>();
        for (Object w : Json.array(m.get("warnings"))) warnings.add(warning(Json.object(w)));
        if (m.containsKey("error")) warnings.add(warning(Json.object(m.get("error"))));
        return new Decision(Boolean.TRUE.equals(m.get("allowed")), List.copyOf(reasons),
                revision, List.copyOf(warnings));
    }

    private static Warning warning(Map<String, Object> w) {
        return new Warning(String.valueOf(w.get("code")), String.valueOf(w.get("message")));
    }

    /** Is {@code subject} allowed {@code operation} on {@code resource}? Fails closed. */
    public Decision check(String subject, String operation, String resource) {
        return check(subject, operation, resource, null);
    }

    /**
     * {@link #check(String, String, String)} with the facts' validity intervals read at
     * {@code now} (an ISO 8601 time, e.g. {@code 2026-03-03T12:00:00Z}; null: the server's clock).
     */
    public Decision check(String subject, String operation, String resource, String now) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("subject", subject);
        body.put("operation", operation);
        body.put("resource", resource);
        body.put("at_least_revision", revision);
        if (now != null) body.put("now", now);
        Map<String, Object> out = post("/v1/check", body);
        if (out.containsKey("error")) {  // the service failed closed: surface it as a denial
            Map<String, Object> err = Json.object(out.get("error"));
            throw new GrantlogException(200, String.valueOf(err.get("code")),
                    String.valueOf(err.get("message")));
        }
        long rev = number(out, "revision");
        seen(rev);
        return decision(out, rev);
    }

    /** Many decisions in one request: each element is {subject, operation, resource}. */
    public List<Decision> checkBatch(List<String[]> checks) {
        List<Object> items = new ArrayList<>();
        for (String[] c : checks) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("subject", c[0]);
            m.put("operation", c[1]);
            m.put("resource", c[2]);
            items.add(m);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("checks", items);
        body.put("at_least_revision", revision);
        Map<String, Object> out = post("/v1/check/batch", body);
        long rev = number(out, "revision");
        seen(rev);
        List<Decision> result = new ArrayList<>();
        for (Object r : Json.array(out.get("results"))) result.add(decision(Json.object(r), rev));
        return result;
    }

    /**
     * Insert and retract base facts as one transaction ({@code relation -> rows}); with
     * {@code ifRevision >= 0} a compare-and-set (status 409 on conflict). Returns the revision.
     */
    public long write(Map<String, List<List<Object>>> insert,
                      Map<String, List<List<Object>>> retract, long ifRevision) {
        return write(insert, retract, ifRevision, null, null, null);
    }

    /**
     * {@link #write(Map, Map, long)} recording who writes and why with the transaction
     * ({@code grantlog store log} shows them; a null {@code author} is the token's name, when
     * the server gave it one; null {@code reason} and {@code ticket} are not recorded).
     */
    public long write(Map<String, List<List<Object>>> insert,
                      Map<String, List<List<Object>>> retract, long ifRevision,
                      String author, String reason, String ticket) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("insert", insert);
        body.put("retract", retract);
        if (ifRevision >= 0) body.put("if_revision", ifRevision);
        if (author != null) body.put("author", author);
        if (reason != null) body.put("reason", reason);
        if (ticket != null) body.put("ticket", ticket);
        long rev = number(post("/v1/write", body), "revision");
        seen(rev);
        return rev;
    }

    /**
     * Insert {@code rows} of {@code relation} valid from {@code validFrom} until (not including)
     * {@code validUntil}: ISO 8601 times, either null for unbounded (an expiring or a scheduled
     * grant). Returns the revision.
     */
    public long writeValid(String relation, List<List<Object>> rows, String validFrom,
                           String validUntil) {
        Map<String, Object> group = new LinkedHashMap<>();
        group.put("relation", relation);
        group.put("rows", rows);
        if (validFrom != null) group.put("valid_from", validFrom);
        if (validUntil != null) group.put("valid_until", validUntil);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("timed", List.of(group));
        long rev = number(post("/v1/write", body), "revision");
        seen(rev);
        return rev;
    }

    /** Grant a role: {@code role_of(principal, role)} (the Gravitino model's relation). */
    public long grantRole(String principal, String role) {
        return write(Map.of("role_of", List.of(List.of(principal, role))), Map.of(), -1);
    }

    /**
     * Read the watch feed (server-sent events) from after {@code since}, calling {@code onChange}
     * for each transaction until it returns false; {@code relation} (URL-encoded here) may be
     * null for every watched relation.
     */
    public void watch(long since, String relation, Predicate<Change> onChange) {
        String query = "?since=" + since
                + (relation == null ? "" : "&relation=" + encode(relation));
        HttpRequest req = request("/v1/watch" + query)
                .timeout(Duration.ofMinutes(60)).GET().build();
        try {
            HttpResponse<Stream<String>> resp = http.send(req, HttpResponse.BodyHandlers.ofLines());
            if (resp.statusCode() >= 400) {
                String text;
                try (Stream<String> lines = resp.body()) {
                    text = String.join("\n", lines.toList());
                }
                answer(resp.statusCode(), text);  // throws, with the service's code
            }
            try (Stream<String> lines = resp.body()) {
                var it = lines.iterator();
                String event = "message";
                while (it.hasNext()) {
                    String line = it.next();
                    if (line.isEmpty()) {  // the end of an event
                        event = "message";
                        continue;
                    }
                    if (line.startsWith("event: ")) event = line.substring(7);
                    // only changes: "policy" events say the rules were replaced
                    if (!line.startsWith("data: ") || !event.equals("change")) continue;
                    Map<String, Object> m = answer(200, line.substring(6));
                    Change ch = new Change(number(m, "revision"),
                            String.valueOf(m.get("relation")), rows(m.get("gained")),
                            rows(m.get("lost")),
                            m.get("at") == null ? null : String.valueOf(m.get("at")));
                    if (!onChange.test(ch)) return;
                }
            }
        } catch (IOException e) {
            throw new GrantlogException(0, "service-unavailable", e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static List<List<Object>> rows(Object v) {
        List<List<Object>> out = new ArrayList<>();
        for (Object r : Json.array(v)) out.add(Json.array(r));
        return out;
    }
}

package io.grantlog;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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
 * The client keeps the highest revision it wrote and sends it as {@code at_least_revision}, so
 * its reads include its own writes whichever worker answers. A failure to reach the service or
 * an error answer throws {@link GrantlogException}: the caller must deny (fail closed).
 */
public final class GrantlogClient {
    /** One decision: allowed or not, the rules that decided it, the facts' revision. */
    public record Decision(boolean allowed, List<String> reasons, long revision) {}

    /** One transaction's gained and lost rows of a watched relation (from the watch feed). */
    public record Change(long revision, String relation, List<List<Object>> gained,
                         List<List<Object>> lost) {}

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

    private HttpRequest.Builder request(String path) {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path))
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
        Map<String, Object> out = Json.object(Json.read(resp.body()));
        if (resp.statusCode() >= 400) {
            Map<String, Object> err = Json.object(out.get("error"));
            throw new GrantlogException(resp.statusCode(), String.valueOf(err.get("code")),
                    String.valueOf(err.get("message")));
        }
        return out;
    }

    private static Decision decision(Map<String, Object> m, long revision) {
        List<String> reasons = new ArrayList<>();
        for (Object r : Json.array(m.get("reasons"))) reasons.add((String) r);
        return new Decision(Boolean.TRUE.equals(m.get("allowed")), reasons, revision);
    }

    /** Is {@code subject} allowed {@code operation} on {@code resource}? Fails closed. */
    public Decision check(String subject, String operation, String resource) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("subject", subject);
        body.put("operation", operation);
        body.put("resource", resource);
        body.put("at_least_revision", revision);
        Map<String, Object> out = post("/v1/check", body);
        if (out.containsKey("error")) {  // the service failed closed: surface it as a denial
            Map<String, Object> err = Json.object(out.get("error"));
            throw new GrantlogException(200, String.valueOf(err.get("code")),
                    String.valueOf(err.get("message")));
        }
        long rev = ((Number) out.get("revision")).longValue();
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
        long rev = ((Number) out.get("revision")).longValue();
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
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("insert", insert);
        body.put("retract", retract);
        if (ifRevision >= 0) body.put("if_revision", ifRevision);
        long rev = ((Number) post("/v1/write", body).get("revision")).longValue();
        seen(rev);
        return rev;
    }

    /** Grant a role: {@code role_of(principal, role)} (the Gravitino model's relation). */
    public long grantRole(String principal, String role) {
        return write(Map.of("role_of", List.of(List.of(principal, role))), Map.of(), -1);
    }

    /**
     * Read the watch feed (server-sent events) from after {@code since}, calling {@code onChange}
     * for each transaction until it returns false.
     */
    public void watch(long since, String relation, Predicate<Change> onChange) {
        HttpRequest req = request("/v1/watch?since=" + since + "&relation=" + relation)
                .timeout(Duration.ofMinutes(60)).GET().build();
        try {
            HttpResponse<Stream<String>> resp = http.send(req, HttpResponse.BodyHandlers.ofLines());
            if (resp.statusCode() >= 400) {
                throw new GrantlogException(resp.statusCode(), "watch-failed",
                        String.join("\n", resp.body().toList()));
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
                    Map<String, Object> m = Json.object(Json.read(line.substring(6)));
                    Change ch = new Change(((Number) m.get("revision")).longValue(),
                            (String) m.get("relation"), rows(m.get("gained")), rows(m.get("lost")));
                    if (!onChange.test(ch)) return;
                }
            }
        } catch (IOException e) {
            throw new GrantlogException(0, "service-unavailable", e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @SuppressWarnings("unchecked")
    private static List<List<Object>> rows(Object v) {
        List<List<Object>> out = new ArrayList<>();
        for (Object r : Json.array(v)) out.add((List<Object>) r);
        return out;
    }
}

package io.grantlog;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * One call of {@link GrantlogClient} from the command line, its outcome printed as one line, for
 * tests/test_clients.py: {@code java -cp out io.grantlog.Probe URL TOKEN COMMAND ARGS...} with
 * <ul>
 *   <li>{@code check S O R}: {@code ALLOW|DENY reasons=[...] revision=N warnings=[code...]}</li>
 *   <li>{@code batch S O R [S O R]...}: a line per decision as for check, then
 *       {@code client revision N}</li>
 *   <li>{@code watch SINCE RELATION}: the first change,
 *       {@code change REV RELATION gained N lost M} (and {@code at TIME} for a validity edge)</li>
 *   <li>{@code watch2 SINCE RELATION}: the first two changes, a line each</li>
 *   <li>{@code checkat S O R NOW}: as check, with the validity intervals read at NOW</li>
 *   <li>{@code writevalid REL FROM UNTIL V...}: one row valid in [FROM, UNTIL) ({@code -}:
 *       unbounded), {@code revision N}</li>
 * </ul>
 * A {@link GrantlogClient.GrantlogException} prints {@code GrantlogException STATUS CODE} and
 * its message; any other exception escapes (exit 1 with its stack trace): the client let it out.
 * An empty TOKEN sends none.
 */
public final class Probe {
    private Probe() {}

    private static String show(GrantlogClient.Decision d) {
        List<String> codes = new ArrayList<>();
        for (GrantlogClient.Warning w : d.warnings()) codes.add(w.code());
        return (d.allowed() ? "ALLOW" : "DENY") + " reasons=" + d.reasons() + " revision="
                + d.revision() + " warnings=" + codes;
    }

    private static String change(GrantlogClient.Change ch) {
        return "change " + ch.revision() + " " + ch.relation() + " gained " + ch.gained().size()
                + " lost " + ch.lost().size() + (ch.at() == null ? "" : " at " + ch.at());
    }

    public static void main(String[] args) {
        GrantlogClient c = new GrantlogClient(URI.create(args[0]),
                args[1].isEmpty() ? null : args[1]);
        try {
            switch (args[2]) {
                case "check" -> System.out.println(show(c.check(args[3], args[4], args[5])));
                case "batch" -> {
                    List<String[]> checks = new ArrayList<>();
                    for (int i = 3; i + 2 < args.length; i += 3) {
                        checks.add(new String[] {args[i], args[i + 1], args[i + 2]});
                    }
                    for (GrantlogClient.Decision d : c.checkBatch(checks)) {
                        System.out.println(show(d));
                    }
                    System.out.println("client revision " + c.revision());
                }
                case "watch" -> c.watch(Long.parseLong(args[3]), args[4], ch -> {
                    System.out.println(change(ch));
                    return false;
                });
                case "watch2" -> {
                    int[] seen = {0};
                    c.watch(Long.parseLong(args[3]), args[4], ch -> {
                        System.out.println(change(ch));
                        return ++seen[0] < 2;
                    });
                }
                case "checkat" -> System.out.println(show(c.check(args[3], args[4], args[5],
                        args[6])));
                case "writevalid" -> {
                    List<Object> row = new ArrayList<>(List.of((Object[]) args).subList(6,
                            args.length));
                    System.out.println("revision " + c.writeValid(args[3], List.of(row),
                            args[4].equals("-") ? null : args[4],
                            args[5].equals("-") ? null : args[5]));
                }
                default -> throw new IllegalArgumentException("unknown command " + args[2]);
            }
        } catch (GrantlogClient.GrantlogException e) {
            System.out.println("GrantlogException " + e.status() + " " + e.getMessage());
        }
    }
}

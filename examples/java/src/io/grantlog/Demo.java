package io.grantlog;

import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What an authorizer plugin does, against a live {@code grantlog serve} of the Gravitino model:
 * {@code java -cp out io.grantlog.Demo URL READ_TOKEN WRITE_TOKEN}. Prints one line per step.
 */
public final class Demo {
    public static void main(String[] args) throws Exception {
        URI url = URI.create(args[0]);
        GrantlogClient reader = new GrantlogClient(url, args[1]);
        GrantlogClient writer = new GrantlogClient(url, args[2]);
        String table = "m1.lakehouse.sales.orders";

        GrantlogClient.Decision d = reader.check("alice", "load_table", table);
        System.out.println("check alice load_table " + (d.allowed() ? "ALLOW" : "DENY")
                + " " + d.reasons() + " at " + d.revision());

        List<GrantlogClient.Decision> batch = reader.checkBatch(List.of(
                new String[] {"alice", "load_table", table},
                new String[] {"carol", "load_table", "m1.lakehouse.sales.customers"}));
        StringBuilder b = new StringBuilder("batch");
        for (GrantlogClient.Decision x : batch) b.append(x.allowed() ? " ALLOW" : " DENY");
        System.out.println(b);

        // the watch feed, from the current revision on, in the background
        long since = d.revision();
        CountDownLatch got = new CountDownLatch(1);
        AtomicReference<GrantlogClient.Change> change = new AtomicReference<>();
        Thread watcher = new Thread(() -> reader.watch(since, "allowed", ch -> {
            change.set(ch);
            got.countDown();
            return false;
        }));
        watcher.setDaemon(true);
        watcher.start();
        Thread.sleep(300);

        long rev = writer.write(Map.of("member", List.of(List.of("dave", "analysts"))), Map.of(),
                since);
        System.out.println("write member(dave, analysts) at " + rev);
        GrantlogClient.Decision after = writer.check("dave", "load_table", table);
        System.out.println("check dave load_table " + (after.allowed() ? "ALLOW" : "DENY")
                + " at " + after.revision());
        if (!got.await(20, TimeUnit.SECONDS)) throw new IllegalStateException("no watch event");
        System.out.println("watch revision " + change.get().revision() + " gained "
                + change.get().gained().size() + " lost " + change.get().lost().size());
        try {
            writer.write(Map.of(), Map.of("member", List.of(List.of("dave", "analysts"))), since);
            System.out.println("compare-and-set UNEXPECTEDLY accepted");
        } catch (GrantlogClient.GrantlogException e) {
            System.out.println("compare-and-set refused " + e.status() + " " + e.code());
        }
        writer.write(Map.of(), Map.of("member", List.of(List.of("dave", "analysts"))), rev);
        try {
            reader.grantRole("dave", "m1/role/admin");
        } catch (GrantlogClient.GrantlogException e) {
            System.out.println("reader write refused " + e.status() + " " + e.code());
        }
    }
}

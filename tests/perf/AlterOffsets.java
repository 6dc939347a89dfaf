/*
 * Kafka's own Admin client committing every group's offsets at once: the "Java Admin" row of
 * tests/perf/bench_migrate.py, which runs it as a single-file program (no build step):
 *
 *     java -cp <the kafka-3.9 bundle's jars> tests/perf/AlterOffsets.java BOOTSTRAP OFFSETS_FILE
 *
 * OFFSETS_FILE has a line `group topic partition offset` per offset, a group's lines together.
 * One Admin fires alterConsumerGroupOffsets for every group without waiting, then waits for all
 * of them. Prints {"seconds": ..., ...} on stdout, the first call sent to the last one acknowledged,
 * timed here: JVM start-up, reading the file and connecting the Admin are outside it, and the CPU
 * time this JVM spent in it (near the seconds: the client set the pace; well under: the broker
 * did). A failed call exits 1, the errors on stderr.
 *
 * What limits it: KafkaAdminClient hard-codes ONE request in flight per connection (it has no
 * max.in.flight.requests.per.connection setting to raise), and each call is a FindCoordinator
 * then an OffsetCommit of its own (no batching across calls), so against one broker the groups
 * go through as 2 x groups request/response round trips, one after the other, over one
 * connection, on the Admin's one network thread.
 */

import java.io.BufferedReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

import com.sun.management.OperatingSystemMXBean;

public class AlterOffsets {

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: AlterOffsets BOOTSTRAP OFFSETS_FILE");
            System.exit(2);
        }
        long setupStart = System.nanoTime();
        Map<String, Map<TopicPartition, OffsetAndMetadata>> groups = read(args[1]);
        int offsets = groups.values().stream().mapToInt(Map::size).sum();

        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "zk2kafka-bench-java-admin");
        // Every call is queued at once and its deadline runs from then, not from when it is sent:
        // with the default 60 s the tail of a large run would time out in the queue, which says
        // nothing about the broker. A request on the wire keeps the default request.timeout.ms.
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "3600000");

        try (Admin admin = Admin.create(props)) {
            // Connected and holding the cluster's metadata before the clock, as the Python loop's
            // KafkaAdminClient is once constructed.
            admin.describeCluster().nodes().get();
            double setup = (System.nanoTime() - setupStart) / 1e9;

            OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            long cpuStart = os.getProcessCpuTime();
            long start = System.nanoTime();
            List<Map.Entry<String, KafkaFuture<Void>>> pending = new ArrayList<>(groups.size());
            for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> g : groups.entrySet()) {
                pending.add(Map.entry(g.getKey(), admin.alterConsumerGroupOffsets(g.getKey(), g.getValue()).all()));
            }
            int failed = 0;
            for (Map.Entry<String, KafkaFuture<Void>> p : pending) {
                try {
                    p.getValue().get();
                } catch (ExecutionException e) {
                    if (failed++ < 10) {
                        System.err.println(p.getKey() + ": " + e.getCause());
                    }
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            double cpu = (os.getProcessCpuTime() - cpuStart) / 1e9;
            if (failed > 0) {
                System.err.println(failed + " of " + groups.size() + " groups failed");
                System.exit(1);
            }
            System.out.printf("{\"seconds\": %.6f, \"cpu_s\": %.3f, \"groups\": %d, \"offsets\": %d, "
                              + "\"setup_s\": %.3f}%n", seconds, cpu, groups.size(), offsets, setup);
        }
    }

    private static Map<String, Map<TopicPartition, OffsetAndMetadata>> read(String path) throws Exception {
        Map<String, Map<TopicPartition, OffsetAndMetadata>> groups = new LinkedHashMap<>();
        try (BufferedReader in = Files.newBufferedReader(Paths.get(path), StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                String[] f = line.trim().split(" ");
                groups.computeIfAbsent(f[0], g -> new HashMap<>())
                      .put(new TopicPartition(f[1], Integer.parseInt(f[2])),
                           new OffsetAndMetadata(Long.parseLong(f[3])));
            }
        }
        return groups;
    }
}

package io.sumi.faults.driver;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * Runs one {@link FaultScenario}: a private PostgreSQL cluster, a Kafka broker JVM and N
 * application JVMs; while the instances create orders, kills random instances ({@code kill -9},
 * restarted at once), restarts PostgreSQL once and kills and restarts the broker once; then waits
 * until the system is quiescent and counts the invariants. Logs go to
 * {@code <build dir>/fault-runs/<scenario name>/}.
 *
 * <p>Instances that exit on their own (one that starts while the database is down fails in
 * Flyway/Hikari and exits) are restarted and counted as {@code app_restarts}, not as failures of
 * the library.
 */
public final class FaultDriver {

    static final String TOPIC = "orders";
    static final int PARTITIONS = 6;

    /** The CDC mode's negative control: how long nothing may move before the missing orders count as lost. */
    private static final Duration LOST_FOR_GOOD = Duration.ofSeconds(20);

    /** The CDC mode's {@code sumi.outbox.cdc.polling-delay} (application-cdc.properties). */
    private static final Duration CDC_POLLING_DELAY = Duration.ofSeconds(5);

    /** The least time between two faults. */
    private static final Duration MIN_GAP = Duration.ofSeconds(2);

    /** Orders (one outbox row each) without a COMPLETED ledger row in one of the two consumers. */
    private static final String LEDGER_INCOMPLETE = """
            SELECT DISTINCT o.aggregate_id FROM outbox o CROSS JOIN (VALUES ('shipments'), ('charges')) AS c (name)
            WHERE NOT EXISTS (SELECT 1 FROM processed_messages p
                              WHERE p.consumer = c.name AND p.message_id = CAST(o.id AS VARCHAR) AND p.status = 'COMPLETED')
            ORDER BY 1""";

    private final FaultScenario scenario;
    private final Path buildDir;
    private final Path runDir;
    private final Random random;
    private final StringBuilder journal = new StringBuilder();
    private final long startNanos = System.nanoTime();

    public FaultDriver(FaultScenario scenario, Path buildDir) {
        this.scenario = scenario;
        this.buildDir = buildDir;
        this.runDir = buildDir.resolve("fault-runs").resolve(scenario.name());
        this.random = new Random(scenario.seed());
    }

    /** The build directory holding {@code app.classpath}: from {@code sumi.faults.build-dir}, else found from the working directory. */
    public static Path defaultBuildDir() {
        String configured = System.getProperty("sumi.faults.build-dir");
        if (configured != null) {
            return Path.of(configured);
        }
        for (Path candidate : List.of(Path.of("target"), Path.of("fault-tests", "target"))) {
            if (Files.exists(candidate.resolve("app.classpath"))) {
                return candidate.toAbsolutePath();
            }
        }
        throw new IllegalStateException(
                "No fault-tests/target/app.classpath: run ./mvnw -pl fault-tests -am verify once first");
    }

    public FaultReport run() {
        prepareRunDir();
        note("scenario " + scenario);
        List<AppInstance> instances = new ArrayList<>();
        PostgresCluster postgres = new PostgresCluster(runDir.resolve("pg"), scenario.cdc());
        RabbitBroker rabbit =
                scenario.rabbit() ? new RabbitBroker(runDir.resolve("rabbitmq"), scenario.deliveryLimit()) : null;
        Broker broker = rabbit != null
                ? rabbit
                : new KafkaBroker(
                        runDir.resolve("kafka"),
                        Processes.readClasspath(buildDir.resolve("broker.classpath"))
                                .get(0),
                        TOPIC,
                        PARTITIONS);
        AtomicInteger appRestarts = new AtomicInteger();
        int kills = 0;
        int postgresRestarts = 0;
        int brokerRestarts = 0;
        int injected = 0;
        boolean quiescent = false;
        // If this JVM is stopped (Ctrl-C, a build timeout), take the processes it started with it.
        Thread cleanup = new Thread(() -> {
            instances.forEach(AppInstance::kill9);
            broker.stop();
            postgres.stopQuietly();
        });
        Runtime.getRuntime().addShutdownHook(cleanup);
        try (PaymentProvider provider = new PaymentProvider()) {
            try {
                postgres.initAndStart();
                note("postgres up at " + postgres.jdbcUrl());
                broker.initAndStart();
                note("broker up at " + broker.address()
                        + (rabbit != null
                                ? ": quorum queues " + RabbitBroker.QUEUES + ", x-delivery-limit="
                                        + scenario.deliveryLimit() + ", dead-letter exchange "
                                        + RabbitBroker.DEAD_LETTER_EXCHANGE
                                : ""));
                Path goFile = runDir.resolve("go");
                List<String> command = appCommand(postgres, broker, provider, goFile);
                for (int slot = 1; slot <= scenario.instances(); slot++) {
                    AppInstance instance = new AppInstance(slot, runDir, command);
                    instances.add(instance);
                    instance.start();
                }
                awaitReady(instances, appRestarts, Duration.ofMinutes(4));
                note("all instances up");
                try (ProgressMonitor monitor = new ProgressMonitor(postgres.jdbcUrl(), provider)) {
                    Files.createFile(goFile);
                    Instant loadStart = Instant.now();
                    List<Event> events = plan();
                    long loadMillis = scenario.loadDuration().toMillis();
                    long giveUp = loadMillis * 3 + 180_000;
                    int next = 0;
                    long quietUntil = 0;
                    long nextDuplicate = 0;
                    while (true) {
                        supervise(instances, broker, appRestarts);
                        if (injected < scenario.injectedDuplicates() && System.nanoTime() >= nextDuplicate) {
                            injected += injectDuplicate(postgres, broker) ? 1 : 0;
                            nextDuplicate = System.nanoTime()
                                    + loadMillis * 800_000L / Math.max(1, scenario.injectedDuplicates());
                        }
                        long elapsed =
                                Duration.between(loadStart, Instant.now()).toMillis();
                        if (next < events.size()
                                && elapsed >= events.get(next).atMillis()
                                && System.nanoTime() >= quietUntil) {
                            Event event = events.get(next);
                            if (event.kind().equals("kill")
                                    && instances.stream().noneMatch(AppInstance::ready)) {
                                Processes.sleep(100); // kill an instance that is working, not one still starting
                                continue;
                            }
                            next++;
                            switch (event.kind()) {
                                case "kill" -> {
                                    kill(instances, monitor, scenario.cdc() && kills % 2 == 0);
                                    kills++;
                                }
                                case "postgres" -> {
                                    restartPostgres(postgres, monitor);
                                    postgresRestarts++;
                                }
                                case "broker" -> {
                                    crashBroker(broker, monitor);
                                    brokerRestarts++;
                                }
                                case "broker-restart" -> {
                                    restartBroker(broker, monitor);
                                    brokerRestarts++;
                                }
                                default -> throw new IllegalStateException(event.kind());
                            }
                            // Faults that fell due while another one lasted are spread out, not fired at once.
                            quietUntil = System.nanoTime() + MIN_GAP.toNanos();
                            continue;
                        }
                        if (next == events.size() && monitor.snapshot().orders() >= scenario.totalOrders()) {
                            break;
                        }
                        if (elapsed > giveUp) {
                            note("load did not complete: " + monitor.snapshot());
                            break;
                        }
                        Processes.sleep(100);
                    }
                    while (injected < scenario.injectedDuplicates()) {
                        // the load ended early: the rest now, so every run has the same number
                        if (injectDuplicate(postgres, broker)) {
                            injected++;
                        } else {
                            Processes.sleep(250);
                        }
                    }
                    if (injected > 0) {
                        note("driver published " + injected + " duplicate messages (same outbox-id)");
                    }
                    note("load done after "
                            + Duration.between(loadStart, Instant.now()).toMillis() + " ms: " + monitor.snapshot());
                    quiescent = drain(instances, broker, appRestarts, monitor);
                    note("drain " + (quiescent ? "quiescent" : "timed out") + ": " + monitor.snapshot());
                    for (AppInstance instance : instances) {
                        if (!quiescent) {
                            // What the stalled consumers were doing, before the kill erases it.
                            note("threads of the live incarnation of slot " + instance.slot() + ": "
                                    + instance.dumpThreads());
                        }
                        instance.kill9();
                    }
                    List<Long> recoveries = new ArrayList<>();
                    List<Long> catchUps = new ArrayList<>();
                    for (ProgressMonitor.Fault fault : monitor.faults()) {
                        note("fault " + fault.kind + " ended " + fault.end + " recovery_ms=" + fault.recoveryMillis
                                + " catchup_ms=" + fault.catchUpMillis);
                        recoveries.add(fault.recoveryMillis);
                        catchUps.add(fault.catchUpMillis);
                    }
                    FaultReport report = measure(
                            postgres,
                            provider,
                            broker,
                            rabbit,
                            injected,
                            kills,
                            postgresRestarts,
                            brokerRestarts,
                            appRestarts.get(),
                            quiescent,
                            recoveries,
                            catchUps);
                    note(report.summaryLine());
                    return report;
                }
            } finally {
                for (AppInstance instance : instances) {
                    instance.kill9();
                }
                broker.stop();
                postgres.stopQuietly();
                writeJournal();
                try {
                    Runtime.getRuntime().removeShutdownHook(cleanup);
                } catch (IllegalStateException ex) {
                    // the JVM is shutting down: the hook runs anyway
                }
            }
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private record Event(long atMillis, String kind) {}

    /** Fault moments within the planned load: kills spread at random, PostgreSQL near a third, the broker near two thirds. */
    private List<Event> plan() {
        long load = scenario.loadDuration().toMillis();
        List<Event> events = new ArrayList<>();
        for (int i = 0; i < scenario.kills(); i++) {
            events.add(new Event((long) (load * (0.05 + 0.85 * random.nextDouble())), "kill"));
        }
        if (scenario.postgresRestart()) {
            events.add(new Event((long) (load * (0.30 + 0.10 * random.nextDouble())), "postgres"));
        }
        if (scenario.brokerKill()) {
            events.add(new Event((long) (load * (0.60 + 0.10 * random.nextDouble())), "broker"));
        }
        if (scenario.brokerRestart()) {
            events.add(new Event((long) (load * (0.50 + 0.10 * random.nextDouble())), "broker-restart"));
        }
        events.sort(Comparator.comparingLong(Event::atMillis));
        note("plan " + events);
        return events;
    }

    private List<String> appCommand(PostgresCluster postgres, Broker broker, PaymentProvider provider, Path goFile) {
        String classpath = buildDir.resolve("classes")
                + java.io.File.pathSeparator
                + Processes.readClasspath(buildDir.resolve("app.classpath")).get(0);
        List<String> command = new ArrayList<>(List.of(
                Processes.javaBinary(),
                "-Xmx320m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                classpath,
                "io.sumi.faults.app.FaultApplication",
                "--spring.datasource.url=" + postgres.jdbcUrl(),
                "--spring.datasource.username=postgres",
                "--fault.broker=" + scenario.broker(),
                "--fault.guard=" + scenario.guard(),
                "--fault.error-handler=" + scenario.errorHandler(),
                "--fault.orders=" + scenario.ordersPerInstance(),
                "--fault.rate=" + scenario.ratePerInstance(),
                "--fault.topic=" + TOPIC,
                "--fault.go-file=" + goFile,
                "--fault.provider-url=" + provider.baseUrl()));
        command.addAll(broker.appArguments());
        if (scenario.cdc()) {
            command.add("--spring.profiles.active=cdc");
            command.add("--fault.cdc-confirm-first=" + scenario.dispatch().equals(FaultScenario.CDC_CONFIRM_FIRST));
        }
        // Extra application arguments for experiments, e.g. -Dsumi.faults.app-args=--fault.error-handler=none
        String extra = System.getProperty("sumi.faults.app-args", "").trim();
        if (!extra.isEmpty()) {
            command.addAll(List.of(extra.split("\\s+")));
        }
        return command;
    }

    private void awaitReady(List<AppInstance> instances, AtomicInteger appRestarts, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!instances.stream().allMatch(AppInstance::ready)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "The application instances did not start in " + timeout + " (see " + runDir + ")");
            }
            for (AppInstance instance : instances) {
                if (!instance.alive()) {
                    if (instance.incarnation() > 5) {
                        throw new IllegalStateException(
                                "Instance " + instance.slot() + " exited during start-up " + instance.incarnation()
                                        + " times; the last one: " + instance.lastCause() + " (see " + runDir + ")");
                    }
                    note("instance " + instance.slot() + " exited during start-up; restarting");
                    appRestarts.incrementAndGet();
                    instance.start();
                }
            }
            Processes.sleep(250);
        }
    }

    /** Restarts whatever exited on its own. */
    private void supervise(List<AppInstance> instances, Broker broker, AtomicInteger appRestarts) {
        for (AppInstance instance : instances) {
            if (!instance.alive()) {
                note("instance " + instance.slot() + " exited on its own; restarting");
                appRestarts.incrementAndGet();
                instance.start();
            }
        }
        if (!broker.alive()) {
            note("broker exited on its own; restarting");
            broker.start();
        }
    }

    /**
     * Kills a random working instance; with {@code streamer} (the CDC mode, every other kill) the
     * one that streams the slot, when one does.
     */
    private void kill(List<AppInstance> instances, ProgressMonitor monitor, boolean streamer) {
        List<AppInstance> working =
                instances.stream().filter(AppInstance::ready).toList();
        List<AppInstance> streaming =
                streamer ? working.stream().filter(AppInstance::streamsCdc).toList() : List.of();
        AppInstance victim = streaming.isEmpty() ? working.get(random.nextInt(working.size())) : streaming.get(0);
        victim.kill9();
        Instant end = Instant.now();
        note("kill -9 instance " + victim.slot() + " incarnation " + victim.incarnation()
                + (streaming.isEmpty() ? "" : " (it streamed the CDC slot)") + "; restarting");
        victim.start();
        monitor.faultEnded("kill s" + victim.slot(), end);
    }

    private void restartPostgres(PostgresCluster postgres, ProgressMonitor monitor) {
        note("postgres: stop -m fast");
        postgres.stopFast();
        Processes.sleep(2000);
        postgres.start();
        note("postgres: started again");
        monitor.faultEnded("postgres", Instant.now());
    }

    /** Publishes a second copy of a random dispatched order's message. */
    private boolean injectDuplicate(PostgresCluster postgres, Broker broker) {
        try (Connection connection = DriverManager.getConnection(
                        postgres.jdbcUrl() + "?connectTimeout=2&socketTimeout=5", "postgres", "");
                PreparedStatement statement = connection.prepareStatement(
                        "SELECT CAST(id AS VARCHAR), aggregate_id FROM outbox WHERE dispatched_at IS NOT NULL"
                                + " ORDER BY id DESC OFFSET ? LIMIT 1")) {
            statement.setInt(1, random.nextInt(50));
            try (ResultSet rows = statement.executeQuery()) {
                return rows.next() && broker.publishDuplicate(rows.getString(1), rows.getString(2));
            }
        } catch (SQLException ex) {
            return false; // PostgreSQL restarting: another one later
        }
    }

    private void crashBroker(Broker broker, ProgressMonitor monitor) {
        note("broker: kill -9, then start again once its process and ports are gone");
        broker.crash();
        note("broker: up again (starts so far: " + broker.starts() + ")");
        monitor.faultEnded("broker crash", Instant.now());
    }

    private void restartBroker(Broker broker, ProgressMonitor monitor) {
        note("broker: graceful shutdown, then start again");
        broker.restart();
        note("broker: up again (starts so far: " + broker.starts() + ")");
        monitor.faultEnded("broker restart", Instant.now());
    }

    /**
     * Waits until every order is shipped and charged and no outbox row is pending, stable for 3 s.
     * The CDC mode's negative control stops waiting once nothing is pending and nothing moved for
     * {@link #LOST_FOR_GOOD}: what its CDC path confirmed unsent is marked dispatched, nothing will
     * send it, and the run would otherwise wait out its drain timeout.
     */
    private boolean drain(
            List<AppInstance> instances, Broker broker, AtomicInteger appRestarts, ProgressMonitor monitor) {
        long deadline = System.nanoTime() + scenario.drainTimeout().toNanos();
        long stableSince = -1;
        ProgressMonitor.Snapshot last = null;
        long unchangedSince = System.nanoTime();
        boolean confirmFirst = scenario.dispatch().equals(FaultScenario.CDC_CONFIRM_FIRST);
        while (System.nanoTime() < deadline) {
            supervise(instances, broker, appRestarts);
            ProgressMonitor.Snapshot s = monitor.snapshot();
            if (!s.equals(last)) {
                last = s;
                unchangedSince = System.nanoTime();
            } else if (confirmFirst
                    && s.orders() >= scenario.totalOrders()
                    && s.pending() == 0
                    && System.nanoTime() - unchangedSince > LOST_FOR_GOOD.toNanos()) {
                note("nothing pending and nothing moved for " + LOST_FOR_GOOD + ": the rest is lost");
                return false;
            }
            boolean done = s.orders() >= scenario.totalOrders()
                    && s.pending() == 0
                    && s.unshipped() == 0
                    && s.uncharged() == 0;
            if (done) {
                if (stableSince < 0) {
                    stableSince = System.nanoTime();
                } else if (System.nanoTime() - stableSince > 3_000_000_000L) {
                    return true;
                }
            } else {
                stableSince = -1;
            }
            Processes.sleep(250);
        }
        return false;
    }

    private FaultReport measure(
            PostgresCluster postgres,
            PaymentProvider provider,
            Broker broker,
            RabbitBroker rabbit,
            int injected,
            int kills,
            int postgresRestarts,
            int brokerRestarts,
            int appRestarts,
            boolean quiescent,
            List<Long> recoveries,
            List<Long> catchUps) {
        try (Connection connection = DriverManager.getConnection(postgres.jdbcUrl(), "postgres", "")) {
            int orders = count(connection, "SELECT count(*) FROM orders");
            List<String> unshipped = ids(
                    connection,
                    "SELECT id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.id) ORDER BY id");
            List<String> shippedTwice = ids(
                    connection,
                    "SELECT order_id FROM shipments GROUP BY order_id HAVING count(*) > 1 ORDER BY order_id");
            int pending = count(connection, "SELECT count(*) FROM outbox WHERE dispatched_at IS NULL");
            // Kafka: rows the outbox marked dispatched that the topic does not hold (sent nowhere,
            // and nothing will send them again); RabbitMQ's queues are consumed, so not counted there.
            List<String> unpublished = List.of();
            if (broker instanceof KafkaBroker kafka) {
                Set<String> inTopic = kafka.outboxIdsInTopic();
                unpublished = ids(
                                connection,
                                "SELECT CAST(id AS VARCHAR) FROM outbox WHERE dispatched_at IS NOT NULL ORDER BY id")
                        .stream()
                        .filter(id -> !inTopic.contains(id))
                        .toList();
                note("topic " + TOPIC + " holds " + inTopic.size() + " distinct outbox ids; " + unpublished.size()
                        + " rows marked dispatched are not among them"
                        + (unpublished.isEmpty()
                                ? ""
                                : ": " + unpublished.stream().limit(10).toList()));
            }
            // CDC mode: rows dispatched within the safety net's poll delay of their creation. Polling
            // takes a row only once it has been due that long, so these were sent from the log (a
            // lower bound: rows the streamer sends late after a take-over are not counted).
            int cdcSent = scenario.cdc()
                    ? count(
                            connection,
                            "SELECT count(*) FROM outbox WHERE dispatched_at < created_at + INTERVAL '"
                                    + CDC_POLLING_DELAY.toSeconds() + " seconds'")
                    : 0;
            // Guarded run only: every message must end COMPLETED in both consumers' ledgers, else it
            // was acknowledged without its completion (a record skipped while its key was busy).
            List<String> ledgerIncomplete = scenario.guard() ? ids(connection, LEDGER_INCOMPLETE) : List.of();
            List<String> uncharged = new ArrayList<>();
            for (String id : ids(connection, "SELECT id FROM orders ORDER BY id")) {
                if (provider.realCharges(id) == 0) {
                    uncharged.add(id);
                }
            }
            List<String> chargedTwice = provider.realChargesByOrder().entrySet().stream()
                    .filter(e -> e.getValue().get() > 1)
                    .map(Map.Entry::getKey)
                    .sorted()
                    .toList();
            if (scenario.guard()) {
                try (PreparedStatement statement = connection.prepareStatement(
                                "SELECT consumer, status, count(*), count(*) FILTER (WHERE attempts > 1)"
                                        + " FROM processed_messages GROUP BY consumer, status ORDER BY 1, 2");
                        ResultSet rows = statement.executeQuery()) {
                    while (rows.next()) {
                        note("ledger: consumer=" + rows.getString(1) + " status=" + rows.getString(2) + " rows="
                                + rows.getInt(3) + " claimed more than once=" + rows.getInt(4));
                    }
                }
            }
            // RabbitMQ mode: every message here was valid and should have run; a dead letter is a loss
            // unless its order took effect anyway (then the count shows it, and the evidence says so).
            List<RabbitBroker.DeadLetter> deadLetters = rabbit != null ? rabbit.deadLetters() : List.of();
            for (RabbitBroker.DeadLetter letter : deadLetters) {
                note("dead letter: queue=" + letter.queue() + " outbox-id=" + letter.outboxId() + " order="
                        + letter.body() + " reason=" + letter.reason() + " x-delivery-count=" + letter.deliveryCount());
            }
            note("provider: requests=" + provider.requests() + " real charges=" + provider.charges()
                    + " keyless requests=" + provider.keylessRequests() + " keys on two orders="
                    + provider.keysOnTwoOrders());
            FaultReport report = new FaultReport(
                    scenario.name(),
                    scenario.guard(),
                    scenario.seed(),
                    scenario.totalOrders(),
                    orders,
                    unshipped.size(),
                    shippedTwice.size(),
                    uncharged.size(),
                    chargedTwice.size(),
                    pending,
                    unpublished.size(),
                    ledgerIncomplete.size(),
                    deadLetters.size(),
                    scenario.broker(),
                    scenario.dispatch(),
                    cdcSent,
                    injected,
                    kills,
                    postgresRestarts,
                    brokerRestarts,
                    appRestarts,
                    scenario.errorHandler(),
                    quiescent,
                    recoveries,
                    catchUps,
                    (System.nanoTime() - startNanos) / 1_000_000_000L);
            if (!report.passed()) {
                writeEvidence(
                        connection,
                        provider,
                        unshipped,
                        shippedTwice,
                        uncharged,
                        chargedTwice,
                        ledgerIncomplete,
                        deadLetters.stream()
                                .map(RabbitBroker.DeadLetter::body)
                                .distinct()
                                .toList());
            }
            return report;
        } catch (SQLException ex) {
            throw new IllegalStateException("Could not measure the run", ex);
        }
    }

    /** For a failed run: the ledger, outbox and shipment rows and the provider's view of some affected orders. */
    private void writeEvidence(
            Connection connection,
            PaymentProvider provider,
            List<String> unshipped,
            List<String> shippedTwice,
            List<String> uncharged,
            List<String> chargedTwice,
            List<String> ledgerIncomplete,
            List<String> deadLettered)
            throws SQLException {
        StringBuilder out = new StringBuilder();
        Map<String, List<String>> groups = Map.of(
                "shipment missing",
                unshipped,
                "shipped twice",
                shippedTwice,
                "charge missing",
                uncharged,
                "charged twice",
                chargedTwice,
                "ledger not COMPLETED",
                ledgerIncomplete,
                "dead-lettered (RabbitMQ)",
                deadLettered);
        for (Map.Entry<String, List<String>> group : groups.entrySet()) {
            out.append("== ")
                    .append(group.getKey())
                    .append(": ")
                    .append(group.getValue().size())
                    .append(" orders\n");
            for (String order : group.getValue().stream().limit(10).toList()) {
                out.append("-- order ")
                        .append(order)
                        .append(" real charges=")
                        .append(provider.realCharges(order))
                        .append('\n');
                rows(connection, out, "SELECT * FROM orders WHERE id = ?", order);
                rows(connection, out, "SELECT * FROM outbox WHERE aggregate_id = ?", order);
                for (String outboxId : ids(
                        connection, "SELECT CAST(id AS VARCHAR) FROM outbox WHERE aggregate_id = '" + order + "'")) {
                    out.append("   provider requests with key ")
                            .append(outboxId)
                            .append(": ")
                            .append(provider.requestsFor(outboxId))
                            .append('\n');
                    rows(connection, out, "SELECT * FROM processed_messages WHERE message_id = ?", outboxId);
                }
                rows(connection, out, "SELECT * FROM shipments WHERE order_id = ?", order);
            }
        }
        try {
            Files.writeString(runDir.resolve("evidence.txt"), out);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        note("evidence written to " + runDir.resolve("evidence.txt"));
    }

    private static void rows(Connection connection, StringBuilder out, String sql, String parameter)
            throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setString(1, parameter);
            try (ResultSet rows = statement.executeQuery()) {
                ResultSetMetaData meta = rows.getMetaData();
                while (rows.next()) {
                    out.append("   ")
                            .append(sql, sql.indexOf("FROM ") + 5, sql.indexOf(" WHERE"))
                            .append(':');
                    for (int i = 1; i <= meta.getColumnCount(); i++) {
                        out.append(' ')
                                .append(meta.getColumnName(i))
                                .append('=')
                                .append(rows.getString(i));
                    }
                    out.append('\n');
                }
            }
        }
    }

    private static int count(Connection connection, String sql) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql);
                ResultSet rows = statement.executeQuery()) {
            rows.next();
            return rows.getInt(1);
        }
    }

    private static List<String> ids(Connection connection, String sql) throws SQLException {
        List<String> ids = new ArrayList<>();
        try (PreparedStatement statement = connection.prepareStatement(sql);
                ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
                ids.add(rows.getString(1));
            }
        }
        return ids;
    }

    private void prepareRunDir() {
        try {
            if (Files.exists(runDir)) {
                try (Stream<Path> paths = Files.walk(runDir)) {
                    for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                        Files.delete(path);
                    }
                }
            }
            Files.createDirectories(runDir);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private synchronized void note(String line) {
        String stamped = String.format("%7.1fs %s%n", (System.nanoTime() - startNanos) / 1e9, line);
        journal.append(stamped);
        System.out.print("[" + scenario.name() + "] " + stamped);
    }

    private synchronized void writeJournal() {
        try {
            Files.writeString(runDir.resolve("driver.log"), journal);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }
}

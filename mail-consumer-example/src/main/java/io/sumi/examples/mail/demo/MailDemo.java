package io.sumi.examples.mail.demo;

import com.icegreen.greenmail.util.GreenMail;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import io.sumi.examples.mail.MailConsumerProperties;
import io.sumi.examples.mail.MailListener;
import io.sumi.examples.mail.SmtpMailGateway;
import io.sumi.examples.mail.orders.Order;
import io.sumi.examples.mail.orders.OrderService;
import io.sumi.examples.support.DemoLauncher;
import io.sumi.examples.support.EmbeddedServices;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.OutboxTable;
import jakarta.mail.MessagingException;
import jakarta.mail.internet.MimeMessage;
import java.lang.management.ManagementFactory;
import java.sql.ResultSet;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * The demo: places the {@link DemoPlan}'s orders through the {@link OrderService} (order rows and
 * the outbox row of the confirmation mail in one transaction; a few roll back), lets the outbox
 * dispatcher publish the rows, publishes copies of some of them ({@link BrokerCopies}) and a few
 * keyless messages, waits until every message is handled (outbox drained, consumer groups without
 * lag), and reports what happened, from the database, the SMTP server's mailboxes and Sumi's meters.
 */
public class MailDemo implements DemoLauncher.Demo {

    private static final Logger log = LoggerFactory.getLogger(MailDemo.class);

    private final DemoProperties demo;
    private final MailConsumerProperties mail;
    private final EmbeddedServices<GreenMail> services;
    private final OrderService orders;
    private final OutboxTable outbox;
    private final BrokerCopies copies;
    private final KafkaTemplate<String, String> template;
    private final KafkaAdmin admin;
    private final KafkaListenerEndpointRegistry listeners;
    private final MeterRegistry meters;
    private final FlakyMailGateway gateway;
    private final DeadLetters deadLetters;
    private final JdbcTemplate jdbc;
    private final String ledgerTable;

    public MailDemo(
            DemoProperties demo,
            MailConsumerProperties mail,
            EmbeddedServices<GreenMail> services,
            OrderService orders,
            OutboxTable outbox,
            BrokerCopies copies,
            KafkaTemplate<String, String> template,
            KafkaAdmin admin,
            KafkaListenerEndpointRegistry listeners,
            MeterRegistry meters,
            FlakyMailGateway gateway,
            DeadLetters deadLetters,
            JdbcTemplate jdbc,
            String ledgerTable) {
        this.demo = demo;
        this.mail = mail;
        this.services = services;
        this.orders = orders;
        this.outbox = outbox;
        this.copies = copies;
        this.template = template;
        this.admin = admin;
        this.listeners = listeners;
        this.meters = meters;
        this.gateway = gateway;
        this.deadLetters = deadLetters;
        this.jdbc = jdbc;
        this.ledgerTable = ledgerTable;
    }

    /** The rabbitmq mode: the consumer reads RabbitMQ, fed by the outbox's RabbitMQ publisher. */
    private @Nullable RabbitMailMode rabbit;

    MailDemo withRabbit(@Nullable RabbitMailMode rabbit) {
        this.rabbit = rabbit;
        return this;
    }

    /** What placing the orders gave: the outbox id of each committed order, the rolled-back ones. */
    private record Placed(Map<String, Long> mailIds, Map<String, String> rolledBack, int poisonSent) {}

    /** Runs the demo once and reports; it does not exit. */
    @Override
    public DemoReport run() throws Exception {
        Duration startup =
                Duration.ofMillis(ManagementFactory.getRuntimeMXBean().getUptime());
        DemoPlan plan = DemoPlan.generate(
                demo.orders(),
                demo.rolledBackOrders(),
                demo.failingOrders(),
                demo.duplicateRatio(),
                demo.concurrentShare(),
                demo.poisonMessages(),
                mail.partitions(),
                demo.seed());
        try (AdminClient client = AdminClient.create(admin.getConfigurationProperties())) {
            if (rabbit != null) {
                rabbit.awaitConsumers(Duration.ofSeconds(60));
            } else {
                awaitAssignment(MailListener.ID, Duration.ofSeconds(60));
                awaitAssignment(DeadLetters.ID, Duration.ofSeconds(60));
            }
            copies.plan(plan.copies());

            long start = System.nanoTime();
            log.info(
                    "Placing {} orders with {} threads ({} roll back after the outbox append); copying {} of the dispatched mail"
                            + " requests on the broker; {} messages without a key",
                    plan.orders().size(),
                    demo.writers(),
                    plan.rolledBack().size(),
                    plan.copies().size(),
                    plan.poisonMessages());
            Placed placed = place(plan);
            Duration placing = Duration.ofNanos(System.nanoTime() - start);

            long deadline = System.nanoTime() + demo.timeout().toNanos();
            boolean done = handled(client, placed);
            while (!done && System.nanoTime() < deadline) {
                Thread.sleep(100);
                done = handled(client, placed);
            }
            Duration total = Duration.ofNanos(System.nanoTime() - start);
            if (!done) {
                log.error("Not every message was handled within {} (sumi.demo.timeout)", demo.timeout());
            }
            return report(plan, placed, !done, new DemoReport.Timing(startup, placing, total));
        }
    }

    /**
     * Waits until every consumer thread of a listener has its partitions, so that the three
     * threads start together and no rebalance moves partitions in the middle of the run.
     */
    private void awaitAssignment(String listenerId, Duration timeout) throws InterruptedException {
        MessageListenerContainer container = listeners.getListenerContainer(listenerId);
        if (container == null) {
            throw new IllegalStateException("No listener container " + listenerId);
        }
        int threads = container instanceof ConcurrentMessageListenerContainer<?, ?> concurrent
                ? concurrent.getConcurrency()
                : 1;
        int expectedConsumers = Math.min(threads, mail.partitions());
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            Map<String, Collection<TopicPartition>> assignments = container.getAssignmentsByClientId();
            int consumers = 0;
            int partitions = 0;
            if (assignments != null) {
                for (Collection<TopicPartition> assigned : assignments.values()) {
                    if (assigned != null && !assigned.isEmpty()) {
                        consumers++;
                        partitions += assigned.size();
                    }
                }
            }
            if (consumers == expectedConsumers && partitions == mail.partitions()) {
                return;
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("The " + threads + " consumer(s) of listener " + listenerId
                + " did not get the topic's partitions within " + timeout);
    }

    /**
     * Runs the plan's steps on {@code sumi.demo.writers} threads, as a shop's request threads
     * would, at {@code sumi.demo.orders-per-second}: each order is one call of
     * {@link OrderService#placeOrder}, one transaction.
     *
     * <p>The first order goes alone, and the others follow once its mail request is on the
     * broker: the outbox's Kafka producer is created on the first send (connections, metadata,
     * producer id: a few hundred milliseconds), and the dispatch lag should show the steady state.
     */
    private Placed place(DemoPlan plan) throws InterruptedException, ExecutionException, TimeoutException {
        Map<String, Long> mailIds = new ConcurrentHashMap<>();
        Map<String, String> rolledBack = new ConcurrentHashMap<>();
        AtomicInteger poisonSent = new AtomicInteger();
        List<DemoPlan.Step> steps = plan.steps();
        int next = 0;
        while (next < steps.size() && steps.get(next).order() != null) {
            Order first = Objects.requireNonNull(steps.get(next).order());
            run(plan, steps.get(next++), mailIds, rolledBack, poisonSent);
            Long id = mailIds.get(first.id());
            if (id == null) {
                continue; // Rolled back: nothing was sent; the next order goes alone instead.
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (outbox.find(id).map(OutboxRecord::pending).orElse(false) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            break;
        }
        AtomicInteger threads = new AtomicInteger();
        ExecutorService writers = Executors.newFixedThreadPool(Math.max(1, demo.writers()), runnable -> {
            Thread thread = new Thread(runnable, "demo-shop-" + threads.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        try {
            List<Future<?>> running = new ArrayList<>(steps.size());
            long begin = System.nanoTime();
            int rate = demo.ordersPerSecond();
            int placed = 0;
            for (DemoPlan.Step step : steps.subList(next, steps.size())) {
                if (rate > 0 && step.isOrder()) {
                    // A steady stream of orders, as a shop gets them, rather than one burst.
                    long wait = begin + placed++ * 1_000_000_000L / rate - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                }
                running.add(writers.submit(() -> {
                    run(plan, step, mailIds, rolledBack, poisonSent);
                    return null;
                }));
            }
            for (Future<?> step : running) {
                step.get();
            }
        } finally {
            writers.shutdownNow();
        }
        return new Placed(Map.copyOf(mailIds), Map.copyOf(rolledBack), poisonSent.get());
    }

    private void run(
            DemoPlan plan,
            DemoPlan.Step step,
            Map<String, Long> mailIds,
            Map<String, String> rolledBack,
            AtomicInteger poisonSent)
            throws InterruptedException, ExecutionException, TimeoutException {
        Order order = step.order();
        if (order == null) {
            // A producer that bypasses the outbox and sets no key: the consumer must dead-letter it.
            if (rabbit != null) {
                rabbit.sendWithoutKey(step.poison());
            } else {
                template.send(new ProducerRecord<>(mail.topic(), step.partition(), null, step.poison()))
                        .get(30, TimeUnit.SECONDS);
            }
            poisonSent.incrementAndGet();
            return;
        }
        try {
            mailIds.put(order.id(), orders.placeOrder(order));
        } catch (DataAccessException ex) {
            if (!plan.rolledBack().contains(order.id())) {
                throw ex;
            }
            String reason = String.valueOf(ex.getMostSpecificCause().getMessage())
                    .lines()
                    .findFirst()
                    .orElse("");
            rolledBack.put(order.id(), reason);
            log.info("Order {} rolled back after its mail was appended to the outbox: {}", order.id(), reason);
        }
    }

    /**
     * Every message handled: the outbox drained, every copy sent, the counters agree, and no lag on
     * the topic nor on the DLT. (In this order: once no row is pending, every copy of a sent row
     * has been planned, because the copies are planned before the dispatcher marks the rows.)
     */
    private boolean handled(AdminClient client, Placed placed) throws Exception {
        if (outbox.stats().pending() > 0 || !copies.idle()) {
            return false;
        }
        long expected = (long) placed.mailIds().size() + copies.concurrentCopies() + copies.lateCopies();
        if (count("processed") + count("duplicate") < expected
                || deadLetters.records().size() < placed.poisonSent()) {
            return false;
        }
        if (rabbit != null) {
            return rabbit.drained();
        }
        return lag(client, MailListener.ID, mail.topic()) == 0
                && lag(client, DeadLetters.ID, mail.deadLetterTopic()) == 0;
    }

    private long lag(AdminClient client, String group, String topic) throws Exception {
        TopicDescription description = client.describeTopics(List.of(topic))
                .allTopicNames()
                .get(10, TimeUnit.SECONDS)
                .get(topic);
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        description
                .partitions()
                .forEach(p -> latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
        Map<TopicPartition, OffsetAndMetadata> committed = client.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata()
                .get(10, TimeUnit.SECONDS);
        long lag = 0;
        for (var end :
                client.listOffsets(latest).all().get(10, TimeUnit.SECONDS).entrySet()) {
            OffsetAndMetadata offset = committed.get(end.getKey());
            lag += end.getValue().offset() - (offset == null ? 0 : offset.offset());
        }
        return lag;
    }

    private long count(String outcome) {
        Counter counter = meters.find("sumi.messages")
                .tag("consumer", MailListener.ID)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : Math.round(counter.count());
    }

    private DemoReport report(DemoPlan plan, Placed placed, boolean timedOut, DemoReport.Timing timing)
            throws MessagingException {
        // The order service's side.
        long orderRows = queryCount("SELECT COUNT(*) FROM orders");
        long rolledBackOrderRows = plan.rolledBack().stream()
                .mapToLong(id -> queryCount("SELECT COUNT(*) FROM orders WHERE id = ?", id))
                .sum();
        DemoReport.Orders ordersReport = new DemoReport.Orders(
                plan.orders().size(),
                demo.writers(),
                demo.ordersPerSecond(),
                placed.mailIds().size(),
                placed.rolledBack().size(),
                orderRows,
                rolledBackOrderRows);

        // The outbox's side: its rows, and the dispatcher's meters.
        record Row(
                long id,
                String aggregateId,
                Timestamp createdAt,
                @Nullable Timestamp dispatchedAt,
                @Nullable String outcome,
                @Nullable Timestamp parkedAt) {}
        List<Row> rows = jdbc.query(
                "SELECT id, aggregate_id, created_at, dispatched_at, dispatch_outcome, parked_at FROM "
                        + outbox.tableName() + " WHERE topic = ?",
                (ResultSet rs, int n) -> new Row(
                        rs.getLong("id"),
                        rs.getString("aggregate_id"),
                        rs.getTimestamp("created_at"),
                        rs.getTimestamp("dispatched_at"),
                        rs.getString("dispatch_outcome"),
                        rs.getTimestamp("parked_at")),
                mail.topic());
        List<Duration> lags = new ArrayList<>();
        long dispatched = 0;
        long pending = 0;
        long parked = 0;
        long ofRolledBack = 0;
        long matching = 0;
        for (Row row : rows) {
            if (row.dispatchedAt() != null && "SENT".equals(row.outcome())) {
                dispatched++;
                lags.add(Duration.between(
                        row.createdAt().toInstant(), row.dispatchedAt().toInstant()));
            } else if (row.dispatchedAt() == null && row.parkedAt() != null) {
                parked++;
            } else if (row.dispatchedAt() == null) {
                pending++;
            }
            if (plan.rolledBack().contains(row.aggregateId())) {
                ofRolledBack++;
            }
            Long mailId = placed.mailIds().get(row.aggregateId());
            if (mailId != null && mailId == row.id()) {
                matching++;
            }
        }
        Collections.sort(lags);
        Timer timer = meters.find(DemoConfiguration.DISPATCH_LATENCY)
                .tag("topic", mail.topic())
                .timer();
        Duration timerP95 = null;
        if (timer != null) {
            for (ValueAtPercentile value : timer.takeSnapshot().percentileValues()) {
                if (Math.abs(value.percentile() - 0.95) < 1e-9) {
                    timerP95 = Duration.ofNanos(Math.round(value.value(TimeUnit.NANOSECONDS)));
                }
            }
        }
        Counter sentCounter = meters.find("outbox.dispatched")
                .tag("topic", mail.topic())
                .tag("outcome", "sent")
                .counter();
        Counter failures =
                meters.find("outbox.send.failures").tag("topic", mail.topic()).counter();
        DemoReport.Outbox outboxReport = new DemoReport.Outbox(
                rows.size(),
                ofRolledBack,
                matching,
                dispatched,
                pending,
                parked,
                sentCounter == null ? 0 : Math.round(sentCounter.count()),
                failures == null ? 0 : Math.round(failures.count()),
                percentile(lags, 0.50),
                percentile(lags, 0.95),
                percentile(lags, 0.99),
                percentile(lags, 1.0),
                timer == null ? 0 : timer.count(),
                timerP95);

        // What the SMTP server received: per key (the outbox id), and which order each mail is about.
        Map<Long, String> orderOfMailId = new HashMap<>();
        placed.mailIds().forEach((order, id) -> orderOfMailId.put(id, order));
        MimeMessage[] received = services.service().getReceivedMessages();
        Map<String, Integer> mailsPerKey = new HashMap<>();
        Map<String, Integer> mailsPerOrder = new HashMap<>();
        int unexpected = 0;
        int rolledBackMailed = 0;
        for (MimeMessage message : received) {
            String subject = message.getSubject();
            if (plan.rolledBack().stream()
                    .anyMatch(id -> OrderService.subject(id).equals(subject))) {
                rolledBackMailed++;
            }
            String[] header = message.getHeader(SmtpMailGateway.IDEMPOTENCY_KEY_HEADER);
            if (header == null || header.length == 0) {
                unexpected++;
                continue;
            }
            mailsPerKey.merge(header[0], 1, Integer::sum);
            String order = mailId(header[0]) == null ? null : orderOfMailId.get(mailId(header[0]));
            if (order == null || !OrderService.subject(order).equals(subject)) {
                unexpected++;
                continue;
            }
            mailsPerOrder.merge(order, 1, Integer::sum);
        }
        int once = (int) mailsPerOrder.values().stream().filter(n -> n == 1).count();
        int twice = (int) mailsPerOrder.values().stream().filter(n -> n > 1).count();
        int never = (int) placed.mailIds().keySet().stream()
                .filter(order -> !mailsPerOrder.containsKey(order))
                .count();
        DemoReport.Mails mails = new DemoReport.Mails(
                received.length, mailsPerKey.size(), once, twice, never, unexpected, rolledBackMailed);

        // The consumer's side: Sumi's counters and ledger.
        Map<String, Long> ledgerRows = new TreeMap<>();
        jdbc.query(
                "SELECT status, COUNT(*) AS n FROM " + ledgerTable + " WHERE consumer = ? GROUP BY status",
                (ResultSet rs) -> {
                    ledgerRows.put(rs.getString("status"), rs.getLong("n"));
                },
                MailListener.ID);
        DemoReport.Consumer consumer = new DemoReport.Consumer(
                count("processed"),
                count("duplicate"),
                count("busy"),
                count("failed"),
                count("rejected"),
                gateway.injectedFailures(),
                plan.greylisted().size(),
                deadLetters.records().size(),
                ledgerRows);

        DemoReport.Broker broker =
                new DemoReport.Broker(copies.concurrentCopies(), copies.lateCopies(), placed.poisonSent());
        return new DemoReport(ordersReport, outboxReport, broker, mails, consumer, timing, timedOut);
    }

    private long queryCount(String sql, Object... args) {
        Long n = jdbc.queryForObject(sql, Long.class, args);
        return n == null ? 0 : n;
    }

    private static @Nullable Long mailId(String key) {
        try {
            return Long.valueOf(key);
        } catch (NumberFormatException ex) {
            return null;
        }
    }

    /** The nearest-rank percentile of sorted values. */
    static Duration percentile(List<Duration> sorted, double percentile) {
        if (sorted.isEmpty()) {
            return Duration.ZERO;
        }
        int rank = (int) Math.ceil(percentile * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }
}

package io.sumi.examples.mail.demo;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.examples.mail.MailConsumerProperties;
import io.sumi.examples.mail.MailListener;
import io.sumi.examples.mail.SmtpMailGateway;
import jakarta.mail.MessagingException;
import jakarta.mail.internet.MimeMessage;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.SendResult;

/**
 * The demo: publishes the {@link DemoPlan}, waits until every message is handled (the consumer
 * groups have no lag left), and reports what happened, from the SMTP server's mailboxes and
 * Sumi's {@code sumi.messages} counters.
 */
public class MailDemo {

    /** The header the demo's producer puts the key in (one of Sumi's default key headers). */
    public static final String KEY_HEADER = "idempotency-key";

    private static final Logger log = LoggerFactory.getLogger(MailDemo.class);

    private final DemoProperties demo;
    private final MailConsumerProperties mail;
    private final DemoServices services;
    private final KafkaTemplate<String, String> template;
    private final KafkaAdmin admin;
    private final KafkaListenerEndpointRegistry listeners;
    private final MeterRegistry meters;
    private final FlakyMailGateway gateway;
    private final DeadLetters deadLetters;
    private final JdbcTemplate jdbc;
    private final String ledgerTable;

    public MailDemo(DemoProperties demo, MailConsumerProperties mail, DemoServices services, KafkaTemplate<String, String> template,
            KafkaAdmin admin, KafkaListenerEndpointRegistry listeners, MeterRegistry meters, FlakyMailGateway gateway,
            DeadLetters deadLetters, JdbcTemplate jdbc, String ledgerTable) {
        this.demo = demo;
        this.mail = mail;
        this.services = services;
        this.template = template;
        this.admin = admin;
        this.listeners = listeners;
        this.meters = meters;
        this.gateway = gateway;
        this.deadLetters = deadLetters;
        this.jdbc = jdbc;
        this.ledgerTable = ledgerTable;
    }

    /** Runs the demo once and reports; it does not exit. */
    public DemoReport run() throws Exception {
        Duration startup = Duration.ofMillis(ManagementFactory.getRuntimeMXBean().getUptime());
        long start = System.nanoTime();
        DemoPlan plan = DemoPlan.generate(demo.messages(), demo.duplicateRatio(), demo.concurrentShare(), demo.failingKeys(),
                demo.poisonMessages(), mail.partitions(), demo.seed());
        try (AdminClient client = AdminClient.create(admin.getConfigurationProperties())) {
            awaitAssignment(MailListener.ID, Duration.ofSeconds(60));
            awaitAssignment(DeadLetters.ID, Duration.ofSeconds(60));
            gateway.failFirstAttemptOf(plan.failingKeys());

            log.info("Publishing {} messages to {} ({} unique keys, {} duplicates, {} without a key)", plan.messages().size(),
                    mail.topic(), plan.uniqueKeys().size(), plan.duplicates(), plan.poisonMessages());
            publish(plan);
            Duration publishing = Duration.ofNanos(System.nanoTime() - start);

            long deadline = System.nanoTime() + demo.timeout().toNanos();
            boolean done;
            while (!(done = handled(client, plan)) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            Duration total = Duration.ofNanos(System.nanoTime() - start);
            if (!done) {
                log.error("Not every message was handled within {} (sumi.demo.timeout)", demo.timeout());
            }
            return report(plan, !done, startup, publishing, total);
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
        int threads = container instanceof ConcurrentMessageListenerContainer<?, ?> concurrent ? concurrent.getConcurrency() : 1;
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

    private void publish(DemoPlan plan) throws InterruptedException, ExecutionException, TimeoutException {
        List<CompletableFuture<SendResult<String, String>>> sends = new ArrayList<>(plan.messages().size());
        for (DemoPlan.Message message : plan.messages()) {
            ProducerRecord<String, String> record = new ProducerRecord<>(mail.topic(), message.partition(), message.key(),
                    message.payload());
            if (message.key() != null) {
                record.headers().add(KEY_HEADER, message.key().getBytes(StandardCharsets.UTF_8));
            }
            sends.add(template.send(record));
        }
        template.flush();
        CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    }

    /** Every message handled: no lag on the topic nor on the DLT, and the counters agree. */
    private boolean handled(AdminClient client, DemoPlan plan) throws Exception {
        int keyed = plan.messages().size() - plan.poisonMessages();
        if (count("processed") + count("duplicate") < keyed || deadLetters.records().size() < plan.poisonMessages()) {
            return false;
        }
        return lag(client, MailListener.ID, mail.topic()) == 0 && lag(client, DeadLetters.ID, mail.deadLetterTopic()) == 0;
    }

    private long lag(AdminClient client, String group, String topic) throws Exception {
        TopicDescription description = client.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        description.partitions().forEach(p -> latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
        Map<TopicPartition, OffsetAndMetadata> committed = client.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get(10, TimeUnit.SECONDS);
        long lag = 0;
        for (var end : client.listOffsets(latest).all().get(10, TimeUnit.SECONDS).entrySet()) {
            OffsetAndMetadata offset = committed.get(end.getKey());
            lag += end.getValue().offset() - (offset == null ? 0 : offset.offset());
        }
        return lag;
    }

    private long count(String outcome) {
        Counter counter = meters.find("sumi.messages").tag("consumer", MailListener.ID).tag("outcome", outcome).counter();
        return counter == null ? 0 : Math.round(counter.count());
    }

    private DemoReport report(DemoPlan plan, boolean timedOut, Duration startup, Duration publishing, Duration total)
            throws MessagingException {
        MimeMessage[] received = services.greenMail().getReceivedMessages();
        Map<String, Integer> mailsPerKey = new HashMap<>();
        int withoutKey = 0;
        for (MimeMessage message : received) {
            String[] header = message.getHeader(SmtpMailGateway.IDEMPOTENCY_KEY_HEADER);
            if (header == null || header.length == 0) {
                withoutKey++;
            }
            else {
                mailsPerKey.merge(header[0], 1, Integer::sum);
            }
        }
        int mailedTwice = (int) mailsPerKey.values().stream().filter(n -> n > 1).count();
        int unexpected = (int) mailsPerKey.keySet().stream().filter(key -> !plan.uniqueKeys().contains(key)).count() + withoutKey;
        int notMailed = (int) plan.uniqueKeys().stream().filter(key -> !mailsPerKey.containsKey(key)).count();
        Map<String, Long> ledgerRows = new TreeMap<>();
        jdbc.query("SELECT status, COUNT(*) AS n FROM " + ledgerTable + " WHERE consumer = ? GROUP BY status",
                (ResultSet rs) -> {
                    ledgerRows.put(rs.getString("status"), rs.getLong("n"));
                }, MailListener.ID);
        return new DemoReport(plan.messages().size(), plan.uniqueKeys().size(), plan.concurrentDuplicates(), plan.lateDuplicates(),
                plan.poisonMessages(), plan.failingKeys().size(), received.length, mailsPerKey.size(), mailedTwice, notMailed,
                unexpected, count("processed"), count("duplicate"), count("busy"), count("failed"), count("rejected"),
                gateway.injectedFailures(), deadLetters.records().size(), ledgerRows, timedOut, startup, publishing, total);
    }
}

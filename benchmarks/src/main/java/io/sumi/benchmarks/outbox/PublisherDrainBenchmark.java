package io.sumi.benchmarks.outbox;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxMessage;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import io.sumi.outbox.rabbit.RabbitDestination;
import io.sumi.outbox.rabbit.RabbitOutboxPublisher;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.amqp.core.BindingBuilder;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.TopicExchange;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Backlog drain of Sumi's outbox, side by side in one run: the same dispatcher, table and
 * PostgreSQL (database {@code sumi_outbox_bench_publishers}, created if missing), once with the
 * Kafka publisher (in-process KRaft broker, topic of 4 partitions, idempotent, acks=all) and once
 * with the RabbitMQ publisher (the broker on 127.0.0.1:5672, publisher confirms, mandatory, a
 * durable topic exchange bound to one durable queue, persistent messages). Rounds alternate
 * (Kafka, RabbitMQ, Kafka, …); rows/s = rows / time from the dispatcher's start until no row is
 * pending. Prints each round and the ratio of the medians. Options: {@code --rows=20000
 * --batch=500 --aggregates=1000 --rounds=3}. Not a test: {@code mvn verify} never runs it.
 */
public final class PublisherDrainBenchmark {

    private PublisherDrainBenchmark() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        for (String arg : args) {
            String[] kv = arg.replaceFirst("^--", "").split("=", 2);
            options.put(kv[0], kv.length > 1 ? kv[1] : "true");
        }
        int rows = Integer.parseInt(options.getOrDefault("rows", "20000"));
        int batch = Integer.parseInt(options.getOrDefault("batch", "500"));
        int aggregates = Integer.parseInt(options.getOrDefault("aggregates", "1000"));
        int rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
        String server = options.getOrDefault("jdbc-server", "jdbc:postgresql://127.0.0.1:5432/");
        String database = "sumi_outbox_bench_publishers";
        try (Connection admin = DriverManager.getConnection(server + "postgres", "postgres", "");
                Statement statement = admin.createStatement()) {
            if (!statement
                    .executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + database + "'")
                    .next()) {
                statement.execute("CREATE DATABASE " + database);
            }
        }
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(server + database);
        hikari.setUsername("postgres");
        hikari.setMaximumPoolSize(10);
        String run = UUID.randomUUID().toString().substring(0, 8);
        String kafkaTopic = "bench.publishers.kafka";
        String rabbitName = "bench.publishers.rabbit." + run;
        EmbeddedKafkaKraftBroker kafka = new EmbeddedKafkaKraftBroker(1, 4, kafkaTopic);
        kafka.afterPropertiesSet();
        CachingConnectionFactory rabbitAdminConnections = new CachingConnectionFactory("127.0.0.1", 5672);
        RabbitAdmin rabbitAdmin = new RabbitAdmin(rabbitAdminConnections);
        try (HikariDataSource dataSource = new HikariDataSource(hikari)) {
            SumiSystem.createTable(dataSource);
            TopicExchange exchange = new TopicExchange(rabbitName, true, false);
            Queue queue = new Queue(rabbitName, true);
            rabbitAdmin.declareExchange(exchange);
            rabbitAdmin.declareQueue(queue);
            rabbitAdmin.declareBinding(BindingBuilder.bind(queue).to(exchange).with("#"));
            com.rabbitmq.client.ConnectionFactory rabbitClient = new com.rabbitmq.client.ConnectionFactory();
            rabbitClient.setHost("127.0.0.1");
            rabbitClient.setPort(5672);
            Duration timeout = Duration.ofSeconds(30);
            try (KafkaOutboxPublisher kafkaPublisher = KafkaOutboxPublisher.create(
                            Map.of("bootstrap.servers", kafka.getBrokersAsString(), "client.id", "bench-publishers"),
                            timeout);
                    RabbitOutboxPublisher rabbitPublisher = RabbitOutboxPublisher.create(
                            rabbitClient,
                            topic -> new RabbitDestination(rabbitName, null),
                            timeout,
                            RabbitOutboxPublisher.DEFAULT_CONTENT_TYPE)) {
                System.out.printf(
                        "Backlog drain, %,d rows over %,d aggregates, dispatcher batch %d, %d rounds each (alternating)%n",
                        rows, aggregates, batch, rounds);
                List<Double> kafkaRates = new ArrayList<>();
                List<Double> rabbitRates = new ArrayList<>();
                for (int round = 1; round <= rounds + 1; round++) {
                    boolean warmup = round == 1;
                    double k = drain(dataSource, kafkaPublisher, kafkaTopic, rows, aggregates, batch);
                    double r = drain(dataSource, rabbitPublisher, "bench.rabbit", rows, aggregates, batch);
                    rabbitAdmin.purgeQueue(rabbitName, false);
                    System.out.printf(
                            "round %d%s: Kafka %,.0f rows/s, RabbitMQ %,.0f rows/s%n",
                            round, warmup ? " (warm-up, not counted)" : "", k, r);
                    if (!warmup) {
                        kafkaRates.add(k);
                        rabbitRates.add(r);
                    }
                }
                double kafkaMedian = median(kafkaRates);
                double rabbitMedian = median(rabbitRates);
                System.out.printf(
                        "median: Kafka %,.0f rows/s, RabbitMQ %,.0f rows/s, RabbitMQ/Kafka = %.2f%n",
                        kafkaMedian, rabbitMedian, rabbitMedian / kafkaMedian);
            }
        } finally {
            rabbitAdmin.deleteQueue(rabbitName);
            rabbitAdmin.deleteExchange(rabbitName);
            rabbitAdminConnections.destroy();
            kafka.destroy();
        }
    }

    private static double drain(
            HikariDataSource dataSource, OutboxPublisher publisher, String topic, int rows, int aggregates, int batch)
            throws Exception {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE outbox");
        }
        OutboxTable table = OutboxTable.of(dataSource);
        Outbox outbox = Outbox.builder(table).build();
        TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
        for (int from = 0; from < rows; from += 1000) {
            List<OutboxMessage> messages = new ArrayList<>(1000);
            for (int seq = from; seq < Math.min(rows, from + 1000); seq++) {
                String aggregate = Payloads.aggregate(seq, aggregates);
                messages.add(OutboxMessage.of(aggregate, topic, Payloads.create("drain", seq, aggregate)));
            }
            tx.executeWithoutResult(status -> outbox.appendAll(messages));
        }
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("ANALYZE outbox");
        }
        OutboxDispatcher dispatcher =
                OutboxDispatcher.builder(table, publisher).batchSize(batch).build();
        long start = System.nanoTime();
        dispatcher.start();
        try {
            while (table.stats().pending() > 0) {
                Thread.sleep(20);
            }
        } finally {
            dispatcher.stop(Duration.ofSeconds(30));
        }
        return rows / ((System.nanoTime() - start) / 1e9);
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}

package io.sumi.jms;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.BudgetConfig;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.FingerprintMismatchPolicy;
import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.TransactionSupport;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.BusyClaimLatches;
import io.sumi.testing.TestDatabase;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.aop.framework.autoproxy.DefaultAdvisorAutoProxyCreator;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jms.annotation.EnableJms;
import org.springframework.jms.annotation.JmsListener;
import org.springframework.jms.config.DefaultJmsListenerContainerFactory;
import org.springframework.jms.config.JmsListenerEndpoint;
import org.springframework.jms.connection.CachingConnectionFactory;
import org.springframework.jms.core.JmsTemplate;
import org.springframework.jms.listener.DefaultMessageListenerContainer;
import org.springframework.jms.support.converter.SimpleMessageConverter;

/**
 * {@code @IdempotentHandler} on {@code @JmsListener} methods against an embedded ActiveMQ Artemis
 * broker (in-VM, redelivery limit 3, then the {@code DLQ} address) and a real ledger database: one
 * Spring context per class, ledger rows and effects keyed by the run. The tests here run on every
 * database ({@link #database()}); the PostgreSQL class adds the broker-side ones.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AbstractJmsListenerIntegrationTests {

    static final String EFFECTS_TABLE = "sumi_jms_it_effects";
    static final Duration BUSY_INTERVAL = Duration.ofMillis(200);

    final String run = UUID.randomUUID().toString().substring(0, 8);
    EmbeddedArtemis broker;
    AnnotationConfigApplicationContext context;
    JmsTemplate sender;
    Listeners listeners;
    ProcessedMessageStore store;
    SimpleMeterRegistry meters;
    JdbcTemplate jdbc;

    /** The ledger's database. */
    abstract TestDatabase database();

    /** The in-VM server id of this class's broker. */
    abstract int brokerId();

    @BeforeAll
    void start() throws Exception {
        broker = new EmbeddedArtemis(brokerId()).start();
        DataSource dataSource = database().dataSource("sumi_test_jms", 4);
        jdbc = new JdbcTemplate(dataSource);
        jdbc.execute("CREATE TABLE IF NOT EXISTS " + EFFECTS_TABLE + " (effect_key VARCHAR(200) NOT NULL)");
        context = new AnnotationConfigApplicationContext();
        context.registerBean(EmbeddedArtemis.class, () -> broker, bd -> bd.setDestroyMethodName(""));
        context.registerBean("ledgerDataSource", DataSource.class, () -> dataSource, bd -> bd.setDestroyMethodName(""));
        context.register(Config.class);
        context.refresh();
        sender = new JmsTemplate(new CachingConnectionFactory(broker.connectionFactory()));
        sender.setReceiveTimeout(200);
        listeners = context.getBean(Listeners.class);
        store = context.getBean(ProcessedMessageStore.class);
        meters = context.getBean(SimpleMeterRegistry.class);
    }

    @AfterAll
    void stop() throws Exception {
        if (context != null) {
            context.close();
        }
        if (broker != null) {
            broker.close();
        }
        if (jdbc != null) {
            jdbc.update("DELETE FROM processed_messages WHERE message_id LIKE ?", run + "-%");
            jdbc.update("DELETE FROM " + EFFECTS_TABLE + " WHERE effect_key LIKE ?", run + "-%");
        }
    }

    /** Sends a text message to {@code queue} with the key in {@code property} (none when {@code key} is null). */
    void send(String queue, @Nullable String property, @Nullable String key, String payload) {
        sender.send(queue, session -> {
            TextMessage message = session.createTextMessage(payload);
            if (property != null && key != null) {
                message.setStringProperty(property, key);
            }
            return message;
        });
    }

    void send(String queue, String key, String payload) {
        send(queue, "outbox_id", key, payload);
    }

    double count(String consumer, String outcome) {
        Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    int effectRows(String key) {
        Integer rows = jdbc.queryForObject(
                "SELECT COUNT(*) FROM " + EFFECTS_TABLE + " WHERE effect_key = ?", Integer.class, key);
        return rows == null ? 0 : rows;
    }

    // ------------------------------------------------------------------ tests on every database

    @Test
    void duplicatesDeliveredToThreeConcurrentConsumersOfOneQueueHaveOneEffectEach() {
        for (int i = 0; i < 30; i++) {
            for (int copy = 0; copy < 3; copy++) {
                send("dup", run + "-dup-" + i, "payload-" + i);
            }
        }

        await().atMost(Duration.ofSeconds(60)).until(() -> count("dup", "processed") + count("dup", "duplicate") == 90);
        assertThat(listeners.effects("dup"))
                .hasSize(30)
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        assertThat(count("dup", "duplicate")).isEqualTo(60);
        assertThat(listeners.threads("dup"))
                .as("several consumers took part: %s", listeners.threads("dup"))
                .hasSizeGreaterThan(1);
    }

    @Test
    void withoutIdempotentHandlerTheSameDuplicatesRunTwiceOrMore() {
        // Negative control of the test above: the same listener without the annotation.
        for (int i = 0; i < 10; i++) {
            for (int copy = 0; copy < 3; copy++) {
                send("plain", run + "-plain-" + i, "payload-" + i);
            }
        }

        await().atMost(Duration.ofSeconds(30))
                .until(() -> listeners.effects("plain").values().stream()
                                .mapToInt(AtomicInteger::get)
                                .sum()
                        == 30);
        assertThat(listeners.effects("plain"))
                .hasSize(10)
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(3));
    }

    @Test
    void aTransactionalHandlerThatFailsAfterItsJdbcEffectIsRolledBackWithTheLedgerAndRedeliveredOnce() {
        String key = run + "-tx";
        send("tx", key, "fail-once");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("tx", "processed") == 1);
        assertThat(listeners.attempts("tx:" + key)).isEqualTo(2);
        assertThat(effectRows(key))
                .as("the first attempt's row was rolled back with the ledger")
                .isEqualTo(1);
    }

    @Test
    void inLeaseModeTheFailedAttemptsJdbcEffectStays() {
        // Negative control: without Sumi's transaction around the handler, the first attempt's row commits.
        String key = run + "-lease-tx";
        send("lease-tx", key, "fail-once");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("lease-tx", "processed") == 1);
        assertThat(listeners.attempts("lease-tx:" + key)).isEqualTo(2);
        assertThat(effectRows(key)).isEqualTo(2);
    }

    @Test
    void whenTheJdbcCommitSucceedsAndTheJmsSessionRollsBackTheRedeliveryIsADuplicate() {
        // The crash window between the two commits: the guarded effect commits, then the listener fails
        // before the container commits the JMS session, so the broker redelivers the message.
        String key = run + "-window";
        send("window", key, "guarded");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("window-effect", "duplicate") == 1);
        assertThat(listeners.attempts("window:" + key)).isEqualTo(2);
        assertThat(effectRows(key)).isEqualTo(1);
    }

    @Test
    void withoutIdempotentHandlerTheRedeliveryAfterTheJdbcCommitRepeatsTheEffect() {
        // Negative control of the test above.
        String key = run + "-window-plain";
        send("window-plain", key, "unguarded");

        await().atMost(Duration.ofSeconds(30)).until(() -> listeners.attempts("window-plain:" + key) == 2);
        await().atMost(Duration.ofSeconds(10)).until(() -> effectRows(key) == 2);
    }

    // ------------------------------------------------------------------ the application

    /** The listeners; effects are counted per key, threads per consumer, attempts per what. */
    static class Listeners {

        final Map<String, Map<String, AtomicInteger>> effects = new ConcurrentHashMap<>();
        final Map<String, Set<String>> threads = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        final Map<String, Integer> deliveryCounts = new ConcurrentHashMap<>();
        final Set<String> failedOnce = ConcurrentHashMap.newKeySet();
        final JdbcTemplate jdbc;
        final GuardedEffects guarded;
        final JmsTemplate downstream;
        final BusyClaimLatches ledger;

        Listeners(DataSource dataSource, GuardedEffects guarded, JmsTemplate downstream, BusyClaimLatches ledger) {
            this.ledger = ledger;
            this.jdbc = new JdbcTemplate(dataSource);
            this.guarded = guarded;
            this.downstream = downstream;
        }

        Map<String, AtomicInteger> effects(String consumer) {
            return effects.computeIfAbsent(consumer, c -> new ConcurrentHashMap<>());
        }

        Set<String> threads(String consumer) {
            return threads.computeIfAbsent(consumer, c -> ConcurrentHashMap.newKeySet());
        }

        int attempts(String what) {
            AtomicInteger n = attempts.get(what);
            return n == null ? 0 : n.get();
        }

        @Nullable
        Integer deliveryCount(String key) {
            return deliveryCounts.get(key);
        }

        void attempt(String what) {
            attempts.computeIfAbsent(what, w -> new AtomicInteger()).incrementAndGet();
        }

        void effect(String consumer, String key) {
            effects(consumer).computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            threads(consumer).add(Thread.currentThread().getName());
        }

        void effect(String consumer) {
            effect(consumer, IdempotencyContext.current().key());
        }

        void insertEffect(String key) {
            jdbc.update("INSERT INTO " + EFFECTS_TABLE + " (effect_key) VALUES (?)", key);
        }

        /** Payload only: the key comes from the delivery Sumi's listener wrapper recorded. */
        @JmsListener(id = "dup", destination = "dup", concurrency = "3-3")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void dup(String payload) throws InterruptedException {
            // Forces the interleaving the test is about: the run goes on once a copy of its key,
            // on another consumer, has been told BUSY by the ledger (or after 1 s, if every copy
            // went to this consumer, one after another).
            IdempotencyContext context = IdempotencyContext.current();
            ledger.awaitBusy(context.consumer(), context.key(), Duration.ofSeconds(1));
            effect("dup");
        }

        @JmsListener(id = "plain", destination = "plain", concurrency = "3-3")
        public void plain(
                String payload, @org.springframework.messaging.handler.annotation.Header("outbox_id") String key) {
            effect("plain", key);
        }

        @JmsListener(id = "tx", destination = "tx")
        @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
        public void tx(String payload) {
            String key = IdempotencyContext.current().key();
            attempt("tx:" + key);
            insertEffect(key);
            if (failedOnce.add("tx:" + key)) {
                throw new IllegalStateException("failed after the JDBC effect");
            }
        }

        @JmsListener(id = "lease-tx", destination = "lease-tx")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void leaseTx(String payload) {
            String key = IdempotencyContext.current().key();
            attempt("lease-tx:" + key);
            insertEffect(key);
            if (failedOnce.add("lease-tx:" + key)) {
                throw new IllegalStateException("failed after the JDBC effect");
            }
        }

        /** Not guarded itself: it calls a guarded effect, then fails once before the JMS session commits. */
        @JmsListener(id = "window", destination = "window")
        public void window(TextMessage message) throws JMSException {
            String key = message.getStringProperty("outbox_id");
            attempt("window:" + key);
            guarded.apply(message);
            if (failedOnce.add("window:" + key)) {
                throw new IllegalStateException("the JMS session rolls back after the JDBC commit");
            }
        }

        @JmsListener(id = "window-plain", destination = "window-plain")
        public void windowPlain(TextMessage message) throws JMSException {
            String key = message.getStringProperty("outbox_id");
            attempt("window-plain:" + key);
            insertEffect(key);
            if (failedOnce.add("window-plain:" + key)) {
                throw new IllegalStateException("the JMS session rolls back after the JDBC commit");
            }
        }
        // ---------------------------------------------- listeners of the PostgreSQL class's tests

        /** A JMS message parameter. */
        @JmsListener(id = "style-jms", destination = "style-jms")
        @IdempotentHandler
        public void styleJms(TextMessage message) throws JMSException {
            effect("style-jms");
            deliveryCounts.put("style-jms:" + message.getText(), message.getIntProperty("JMSXDeliveryCount"));
        }

        /** A messaging Message. */
        @JmsListener(id = "style-messaging", destination = "style-messaging")
        @IdempotentHandler
        public void styleMessaging(org.springframework.messaging.Message<String> message) {
            effect("style-messaging");
        }

        /** A payload with a header. */
        @JmsListener(id = "style-header", destination = "style-header")
        @IdempotentHandler
        public void styleHeader(
                String payload, @org.springframework.messaging.handler.annotation.Header("outbox_id") String key) {
            effect("style-header", key);
        }

        /** A payload alone, the key in Camel's spelling of outbox-id. */
        @JmsListener(id = "style-camel", destination = "style-camel")
        @IdempotentHandler
        public void styleCamel(String payload) {
            effect("style-camel");
        }

        /** A payload alone, the key in the header's own name (sent by a non-JMS producer). */
        @JmsListener(id = "style-dashed", destination = "style-dashed")
        @IdempotentHandler
        public void styleDashed(String payload) {
            effect("style-dashed");
        }

        /** A BytesMessage body converted to byte[]: Sumi fingerprints the raw bytes and leaves the body readable. */
        @JmsListener(id = "bytes", destination = "bytes")
        @IdempotentHandler(onFingerprintMismatch = FingerprintMismatchPolicy.REJECT)
        public void bytes(byte[] payload) {
            effect("bytes", IdempotencyContext.current().key() + "=" + new String(payload, StandardCharsets.UTF_8));
        }

        /** The key from a SpEL expression over the properties (no key header). */
        @JmsListener(id = "spel", destination = "spel")
        @IdempotentHandler(key = "#headers['order_id'] + ':' + #message.getStringProperty('step')")
        public void spel(String payload) {
            effect("spel");
        }

        /** Not guarded itself: a guarded method it calls is refused after the listener's own work. */
        @JmsListener(id = "nested", destination = "nested")
        public void nested(TextMessage message) throws JMSException {
            attempt("nested:" + message.getStringProperty("outbox_id"));
            guarded.apply(message);
        }

        @JmsListener(destination = "poison")
        @IdempotentHandler
        public void poison(String payload) {
            attempt("poison:" + IdempotencyContext.current().key());
            throw new IllegalStateException(
                    "poisoned payload " + IdempotencyContext.current().key());
        }

        @JmsListener(destination = "nokey")
        @IdempotentHandler
        public void noKey(String payload) {
            attempt("nokey:" + payload);
        }

        @JmsListener(destination = "nokey-broker", containerFactory = "brokerLimit")
        @IdempotentHandler
        public void noKeyBroker(String payload) {
            attempt("nokey-broker:" + payload);
        }

        @JmsListener(destination = "busy")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void busy(TextMessage message) throws JMSException {
            String key = IdempotencyContext.current().key();
            attempt("busy:" + key);
            deliveryCounts.put("busy:" + key, message.getIntProperty("JMSXDeliveryCount"));
        }

        @JmsListener(destination = "busy-shorthold", containerFactory = "shortBusyHold")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void busyShortHold(TextMessage message) throws JMSException {
            String key = IdempotencyContext.current().key();
            attempt("busy-shorthold:" + key);
            deliveryCounts.put("busy-shorthold:" + key, message.getIntProperty("JMSXDeliveryCount"));
        }

        @JmsListener(destination = "busy-nohold", containerFactory = "noBusyHold")
        @IdempotentHandler(mode = IdempotencyMode.LEASE)
        public void busyNoHold(TextMessage message) {
            // A message parameter: without Sumi's listener the delivery is found through the arguments.
            attempt("busy-nohold:" + IdempotencyContext.current().key());
        }

        /** Fails once for "boom" payloads; bound to the budget "api". */
        @JmsListener(id = "budget", destination = "budget")
        @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "api")
        public void budget(TextMessage message) throws JMSException {
            String key = IdempotencyContext.current().key();
            deliveryCounts.merge("budget", message.getIntProperty("JMSXDeliveryCount"), Math::max);
            if (message.getText().startsWith("boom") && failedOnce.add("budget:" + key)) {
                throw new IllegalStateException("the paid API failed");
            }
            effect("budget");
        }

        /** The same on a container without a budget stopper: the negative control of the budget hold. */
        @JmsListener(id = "budget-nostop", destination = "budget-nostop", containerFactory = "noStopper")
        @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "api2")
        public void budgetNoStop(String payload) {
            effect("budget-nostop");
        }

        @JmsListener(id = "client-ack", destination = "client-ack", containerFactory = "clientAcknowledge")
        @IdempotentHandler
        public void clientAck(String payload) {
            String key = IdempotencyContext.current().key();
            attempt("client-ack:" + key);
            if (payload.equals("fail-once") && failedOnce.add("client-ack:" + key)) {
                throw new IllegalStateException("failed once");
            }
            effect("client-ack");
        }

        @JmsListener(id = "relay", destination = "relay")
        @IdempotentHandler
        public void relay(String payload) {
            downstream.convertAndSend("relayed", payload);
        }

        @JmsListener(id = "relayed", destination = "relayed")
        public void relayed(
                String payload, @org.springframework.messaging.handler.annotation.Headers Map<String, Object> headers) {
            Object key = headers.get("idempotency_key");
            effect("relayed", payload + "=" + (key == null ? "none" : key));
        }
    }

    /** A guarded effect called by a listener, keyed by its own JMS message argument. */
    static class GuardedEffects {

        final JdbcTemplate jdbc;

        GuardedEffects(DataSource dataSource) {
            this.jdbc = new JdbcTemplate(dataSource);
        }

        @IdempotentHandler(consumer = "window-effect", mode = IdempotencyMode.TRANSACTIONAL)
        public void apply(Message message) throws JMSException {
            jdbc.update(
                    "INSERT INTO " + EFFECTS_TABLE + " (effect_key) VALUES (?)",
                    message.getStringProperty("outbox_id"));
        }
    }

    /** A factory whose containers get Sumi's listener with their own settings (the context's post processor then leaves them). */
    static final class SettingsFactory extends DefaultJmsListenerContainerFactory {

        private final SumiJmsSettings settings;
        private final @Nullable JmsBudgetListenerStopper stopper;

        SettingsFactory(SumiJmsSettings settings, @Nullable JmsBudgetListenerStopper stopper) {
            this.settings = settings;
            this.stopper = stopper;
        }

        @Override
        public DefaultMessageListenerContainer createListenerContainer(JmsListenerEndpoint endpoint) {
            DefaultMessageListenerContainer container = super.createListenerContainer(endpoint);
            SumiJmsMessageListener.wrap(container, settings, stopper);
            return container;
        }
    }

    /** A factory the context's post processor leaves alone: its containers get no Sumi listener. */
    static final class UnwrappedFactory extends DefaultJmsListenerContainerFactory
            implements SumiJmsListenerContainerFactoryPostProcessor.SumiWrapped {}

    @Configuration(proxyBeanMethods = false)
    @EnableJms
    static class Config {

        static final String SUMI_DLQ = "sumi.dlq";

        static DefaultJmsListenerContainerFactory configure(
                DefaultJmsListenerContainerFactory factory, EmbeddedArtemis broker) {
            factory.setConnectionFactory(broker.connectionFactory());
            factory.setSessionTransacted(true);
            factory.setReceiveTimeout(100L);
            return factory;
        }

        /** Transacted sessions (Spring Boot's default); Sumi dead-letters rejected messages to sumi.dlq itself. */
        @Bean
        DefaultJmsListenerContainerFactory jmsListenerContainerFactory(EmbeddedArtemis broker) {
            return configure(new DefaultJmsListenerContainerFactory(), broker);
        }

        /** No dead-letter queue of Sumi's: rejected messages are rolled back until the broker's limit dead-letters them. */
        @Bean
        DefaultJmsListenerContainerFactory brokerLimit(EmbeddedArtemis broker) {
            return configure(
                    new SettingsFactory(new SumiJmsSettings(BUSY_INTERVAL, Duration.ofMinutes(1), null), null), broker);
        }

        /**
         * Containers without Sumi's listener: a busy key is rolled back at once instead of held (the
         * negative control of the busy hold).
         */
        @Bean
        DefaultJmsListenerContainerFactory noBusyHold(EmbeddedArtemis broker) {
            return configure(new UnwrappedFactory(), broker);
        }

        /** A least hold (busyMaxWait) far shorter than the holder's lease. */
        @Bean
        DefaultJmsListenerContainerFactory shortBusyHold(EmbeddedArtemis broker) {
            return configure(
                    new SettingsFactory(new SumiJmsSettings(BUSY_INTERVAL, BUSY_INTERVAL.multipliedBy(2), null), null),
                    broker);
        }

        /** No budget stopper: a refused message is rolled back after a wait (the negative control of the budget hold). */
        @Bean
        DefaultJmsListenerContainerFactory noStopper(EmbeddedArtemis broker) {
            return configure(
                    new SettingsFactory(new SumiJmsSettings(BUSY_INTERVAL, Duration.ofMinutes(1), SUMI_DLQ), null),
                    broker);
        }

        @Bean
        DefaultJmsListenerContainerFactory clientAcknowledge(EmbeddedArtemis broker) {
            DefaultJmsListenerContainerFactory factory = configure(new DefaultJmsListenerContainerFactory(), broker);
            factory.setSessionTransacted(false);
            factory.setSessionAcknowledgeMode(Session.CLIENT_ACKNOWLEDGE);
            return factory;
        }

        @Bean
        static DefaultAdvisorAutoProxyCreator autoProxyCreator() {
            DefaultAdvisorAutoProxyCreator creator = new DefaultAdvisorAutoProxyCreator();
            creator.setProxyTargetClass(true);
            return creator;
        }

        @Bean
        static SumiJmsListenerContainerFactoryPostProcessor sumiContainerFactories(
                ObjectProvider<JmsBudgetListenerStopper> stopper) {
            return new SumiJmsListenerContainerFactoryPostProcessor(
                    () -> new SumiJmsSettings(BUSY_INTERVAL, Duration.ofMinutes(1), SUMI_DLQ), stopper::getIfAvailable);
        }

        @Bean
        static IdempotentJmsHandlerAdvisor sumiAdvisor(ObjectProvider<IdempotentExecutor> executor) {
            return new IdempotentJmsHandlerAdvisor(
                    new IdempotentJmsHandlerInterceptor(executor::getObject, HandlerDefaults::standard));
        }

        @Bean
        ProcessedMessageStore store(DataSource dataSource) {
            // Tells the dup listener when a copy of its message met it (see BusyClaimLatches).
            return new BusyClaimLatches(
                    JdbcProcessedMessageStore.builder(dataSource).build());
        }

        @Bean
        SimpleMeterRegistry meters() {
            return new SimpleMeterRegistry();
        }

        /** "api": opens after one failure in two calls, half-opens a second later; "api2" the same, half-opening after a minute. */
        @Bean
        BudgetRegistry budgets(SimpleMeterRegistry meters) {
            BudgetConfig config = BudgetConfig.custom()
                    .limit(1_000)
                    .window(Duration.ofHours(1))
                    .minimumNumberOfCalls(2)
                    .slidingWindowSize(2)
                    .failureRateThreshold(50)
                    .waitDurationInOpenState(Duration.ofSeconds(1))
                    .build();
            return BudgetRegistry.builder()
                    .meterRegistry(meters)
                    .budget("api", config)
                    .budget(
                            "api2",
                            BudgetConfig.from(config)
                                    .waitDurationInOpenState(Duration.ofMinutes(1))
                                    .build())
                    .build();
        }

        @Bean
        JmsBudgetListenerStopper budgetStopper(BudgetRegistry budgets, SimpleMeterRegistry meters) {
            return new JmsBudgetListenerStopper(budgets, Duration.ofMillis(200), meters);
        }

        @Bean
        IdempotentExecutor executor(
                ProcessedMessageStore store,
                DataSource dataSource,
                SimpleMeterRegistry meters,
                BudgetRegistry budgets) {
            return budgets.decorate(IdempotentExecutor.builder(store)
                    .transactionSupport(TransactionSupport.of(new DataSourceTransactionManager(dataSource), dataSource))
                    .meterRegistry(meters)
                    .build());
        }

        /** What handlers send with: the key passthrough around its converter. */
        @Bean
        JmsTemplate downstream(EmbeddedArtemis broker) {
            JmsTemplate template = new JmsTemplate(new CachingConnectionFactory(broker.connectionFactory()));
            template.setMessageConverter(new IdempotencyKeyJmsPostProcessor().converter(new SimpleMessageConverter()));
            return template;
        }

        @Bean
        GuardedEffects guardedEffects(DataSource dataSource) {
            return new GuardedEffects(dataSource);
        }

        @Bean
        Listeners listeners(
                DataSource dataSource,
                GuardedEffects guardedEffects,
                JmsTemplate downstream,
                ProcessedMessageStore store) {
            return new Listeners(dataSource, guardedEffects, downstream, (BusyClaimLatches) store);
        }
    }
}

package io.sumi.conformance.stream;

import static org.awaitility.Awaitility.await;

import io.sumi.conformance.CatalogueDriver;
import io.sumi.conformance.Role;
import io.sumi.conformance.Scenario;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.springframework.beans.DirectFieldAccessor;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.cloud.stream.binder.Binding;
import org.springframework.cloud.stream.binding.BindingsLifecycleController;
import org.springframework.context.SmartLifecycle;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * What both Stream kinds' drivers share: the database, the functions' ledger namespaces (their bean
 * names), and the scenarios a Stream function cannot express.
 */
abstract class StreamCatalogueTests extends CatalogueDriver {

    /** Both kinds' record bindings: a binding in batch-mode is another kind, not written here. */
    static final String NO_BATCH = "the kind's bindings are record bindings (a batch-mode binding is a kind of its"
            + " own, not in the catalogue yet; the keyless and invalid-key rows cover a record binding)";

    /** Checked by AsyncFunctionOutputTests of binders/spring-cloud-stream. */
    static final String NO_ASYNC = "a Stream function's return value is its output message, never awaited: Sumi"
            + " refuses Function<T, CompletableFuture<R>> and Function<T, Mono<R>> at start-up"
            + " (IdempotentFunctionPostProcessor, AsyncFunctionOutputTests) and a Consumer returns nothing";

    /** The roles both kinds' applications bind (the others have no function). */
    static final List<Role> BOUND = List.of(
            Role.LEASE,
            Role.PLAIN,
            Role.HELD,
            Role.PLAIN_HELD,
            Role.TX,
            Role.PLAIN_TX,
            Role.MANUAL,
            Role.LEDGER_DOWN,
            Role.STOP,
            Role.BUDGET);

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
    }

    /** Stops and starts one binding, as an operator does (the {@code bindings} actuator endpoint's controller). */
    @Autowired
    BindingsLifecycleController bindings;

    @Override
    public boolean batch() {
        return false;
    }

    /** Shared by both kinds; each adds its own. */
    static Map<Scenario, String> notApplicableToStream() {
        return Map.of(
                Scenario.BAD_KEYS_IN_BATCH, NO_BATCH,
                Scenario.ASYNC_FAILED_FUTURE, NO_ASYNC,
                Scenario.ASYNC_FAILED_FUTURE_CONTROL, NO_ASYNC);
    }

    /** Scenarios written for the other kinds that fail on the Stream kinds: none shared; each kind adds its own. */
    @Override
    public Map<Scenario, String> notWritten() {
        return Map.of();
    }

    /** {@code role}'s input binding: its function's first. */
    static String binding(Role role) {
        return StreamCatalogueFunctions.function(role) + "-in-0";
    }

    /**
     * The binder's listener container behind {@code role}'s binding: a binding says whether its
     * endpoint runs only once its stop returned, the scenarios need to see the stop asked. Neither
     * Binding nor the inbound adapters expose it: read through their fields ({@code lifecycle} of
     * DefaultBinding, {@code messageListenerContainer} of the Kafka and AMQP inbound adapters).
     */
    @Override
    protected SmartLifecycle container(Role role) {
        List<Binding<?>> found = bindings.queryState(binding(role));
        if (found.size() != 1) {
            throw new IllegalStateException("bindings named " + binding(role) + ": " + found);
        }
        Object endpoint = new DirectFieldAccessor(found.get(0)).getPropertyValue("lifecycle");
        return (SmartLifecycle)
                Objects.requireNonNull(new DirectFieldAccessor(endpoint).getPropertyValue("messageListenerContainer"));
    }

    /** Through the binding, not the container: the binding's stop is what an operator asks. */
    @Override
    public CompletableFuture<Void> stop(Role role) {
        // The binding's stop waits for the running function: asked on a thread of its own.
        CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> bindings.stop(binding(role)));
        await("the binding " + binding(role) + " stopping")
                .atMost(Duration.ofSeconds(30))
                .until(() -> !listenerRunning(role) || stopped.isDone());
        return stopped;
    }

    @Override
    public void start(Role role) {
        bindings.start(binding(role));
    }

    @Override
    public String consumer(Role role) {
        return StreamCatalogueFunctions.function(role);
    }
}

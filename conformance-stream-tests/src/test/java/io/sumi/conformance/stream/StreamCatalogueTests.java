package io.sumi.conformance.stream;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.conformance.ConformanceCatalogue;
import io.sumi.conformance.ListenerKind;
import io.sumi.conformance.Role;
import io.sumi.conformance.Scenario;
import io.sumi.conformance.Work;
import io.sumi.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * What both Stream kinds' drivers share: the database, the functions' ledger namespaces (their bean
 * names), and the scenarios a Stream function cannot express.
 */
abstract class StreamCatalogueTests extends ConformanceCatalogue implements ListenerKind {

    /** Both kinds' record bindings: a binding in batch-mode is another kind, not written here. */
    static final String NO_BATCH = "the kind's bindings are record bindings (a batch-mode binding is a kind of its"
            + " own, not in the catalogue yet; the keyless and invalid-key rows cover a record binding)";

    /** Checked by AsyncFunctionOutputTests of binders/spring-cloud-stream. */
    static final String NO_ASYNC = "a Stream function's return value is its output message, never awaited: Sumi"
            + " refuses Function<T, CompletableFuture<R>> and Function<T, Mono<R>> at start-up"
            + " (IdempotentFunctionPostProcessor, AsyncFunctionOutputTests) and a Consumer returns nothing";

    /** The roles both kinds' applications bind (the others have no function). */
    static final List<Role> BOUND =
            List.of(Role.LEASE, Role.PLAIN, Role.HELD, Role.PLAIN_HELD, Role.TX, Role.PLAIN_TX, Role.MANUAL);

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
    }

    @Autowired
    Work work;

    @Autowired
    DataSource dataSource;

    @Autowired
    MeterRegistry meters;

    @Override
    protected ListenerKind kind() {
        return this;
    }

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

    /**
     * Scenarios written for the other kinds whose hooks the Stream driver does not have yet: ledger
     * faults ({@link ListenerKind#ledgerFaults()}), stopping and starting one binding, a budget-bound
     * function.
     */
    @Override
    public Map<Scenario, String> notWritten() {
        String faults = "the Stream driver has no ledger faults and no binding stop/start yet";
        return Map.of(
                Scenario.LEDGER_DOWN_DURING_CLAIM, faults,
                Scenario.LEDGER_DOWN_DURING_COMPLETION, faults,
                Scenario.LEDGER_DOWN_DURING_COMMIT, faults,
                Scenario.LEDGER_DOWN_DURING_SHUTDOWN, faults,
                Scenario.STOP_RESTART_MID_BATCH, "the Stream driver has no binding stop/start yet",
                Scenario.BUDGET_OPEN_THEN_CLOSED, "the Stream driver has no budget-bound function yet");
    }

    @Override
    public String consumer(Role role) {
        return StreamCatalogueFunctions.function(role);
    }

    @Override
    public Work work() {
        return work;
    }

    @Override
    public DataSource dataSource() {
        return dataSource;
    }

    @Override
    public MeterRegistry meters() {
        return meters;
    }
}

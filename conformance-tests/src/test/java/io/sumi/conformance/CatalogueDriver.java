package io.sumi.conformance;

import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.SmartLifecycle;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * What every kind's driver shares: the beans each kind's application declares for the catalogue
 * (its {@link Work}, the ledger's DataSource, the meters, the {@link LedgerFaults}, the {@link
 * BudgetWindow}), and the stop, start and running state of a role's listener container. Every
 * binder's listener container is a {@link SmartLifecycle}, whose {@code stop(Runnable)} is the
 * asked, asynchronous stop an endpoint registry gives an operator: a kind names the container
 * ({@link #container}) and overrides what its binder does otherwise.
 */
public abstract class CatalogueDriver extends ConformanceCatalogue implements ListenerKind {

    /**
     * Every kind's pace. Busy keys and ledger outages are retried every 200 ms (the default is 1 s):
     * the ledger-down scenario waits out ten refusals, and the held-key scenarios retry many times
     * within the dead holder's 4 s lease (20 meetings against a delivery limit of 3). A spent budget pauses the container within 100 ms.
     */
    @DynamicPropertySource
    static void cataloguePace(DynamicPropertyRegistry registry) {
        for (String binder : new String[] {"kafka", "rabbit", "jms", "stream"}) {
            registry.add("sumi." + binder + ".busy-retry-interval", () -> "200ms");
        }
        registry.add("sumi.budgets.pause.check-interval", () -> "100ms");
    }

    @Autowired
    protected Work work;

    @Autowired
    protected DataSource dataSource;

    @Autowired
    protected MeterRegistry meters;

    @Autowired
    protected LedgerFaults ledgerFaults;

    @Autowired
    protected BudgetWindow budgetWindow;

    @Override
    protected ListenerKind kind() {
        return this;
    }

    /** {@code role}'s listener container; throws when the application has none. */
    protected abstract SmartLifecycle container(Role role);

    /** {@code container}, or a failure that names the listener the application does not have. */
    protected static <C> C found(@Nullable C container, String listener) {
        if (container == null) {
            throw new IllegalStateException("no listener container " + listener);
        }
        return container;
    }

    /**
     * The container's asked stop: its callback completes the future once the container stopped
     * (each binder says when: its consumer threads ended, its workers ended or its shutdown timeout
     * passed, no consumer busy any more); returns once {@link #listenerRunning} is false.
     */
    @Override
    public CompletableFuture<Void> stop(Role role) {
        SmartLifecycle container = container(role);
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        container.stop(() -> stopped.complete(null));
        await("the container of " + role + " stopping")
                .atMost(Duration.ofSeconds(30))
                .until(() -> !listenerRunning(role));
        return stopped;
    }

    @Override
    public void start(Role role) {
        container(role).start();
    }

    @Override
    public boolean listenerRunning(Role role) {
        return container(role).isRunning();
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

    @Override
    public LedgerFaults ledgerFaults() {
        return ledgerFaults;
    }

    @Override
    public BudgetWindow budgetWindow() {
        return budgetWindow;
    }
}

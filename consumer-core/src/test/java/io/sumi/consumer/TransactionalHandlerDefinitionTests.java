package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;

/**
 * How a handler's own {@code @Transactional} bears on its mode (issue 8, defect 3): only a
 * transaction of the default manager makes {@code AUTO} mean {@code TRANSACTIONAL}; a
 * {@code @Transactional} that names another manager may be a transaction of another resource, in
 * which a ledger row would commit on its own.
 */
class TransactionalHandlerDefinitionTests {

    @IdempotentHandler
    void auto() {}

    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    void transactional() {}

    static IdempotentHandler annotation(String method) throws NoSuchMethodException {
        return TransactionalHandlerDefinitionTests.class
                .getDeclaredMethod(method)
                .getAnnotation(IdempotentHandler.class);
    }

    private final HandlerDefaults defaults = HandlerDefaults.standard();

    @Test
    void autoWithTheDefaultTransactionManagerIsTransactional() throws Exception {
        assertThat(defaults.resolve(annotation("auto"), "c", "", "auto()").mode())
                .isEqualTo(IdempotencyMode.TRANSACTIONAL);
        assertThat(defaults.resolve(annotation("auto"), "c", (String) null, "auto()")
                        .mode())
                .isEqualTo(IdempotencyMode.AUTO);
    }

    @Test
    void autoWithANamedTransactionManagerTakesALease() throws Exception {
        assertThat(defaults.resolve(annotation("auto"), "c", "kafkaTransactionManager", "auto()")
                        .mode())
                .isEqualTo(IdempotencyMode.LEASE);
    }

    @Test
    void transactionalModeWithANamedTransactionManagerIsRefusedAtStartUp() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> defaults.resolve(
                        annotation("transactional"), "c", "ordersTransactionManager", "transactional()"))
                .withMessageContaining("ordersTransactionManager")
                .withMessageContaining("mode = LEASE");
    }
}

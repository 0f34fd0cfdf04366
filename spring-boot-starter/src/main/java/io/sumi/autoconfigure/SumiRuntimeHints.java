package io.sumi.autoconfigure;

import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * Sumi's SQL migrations (module {@code sumi-migrations}, which has no Spring dependency and so no
 * hints of its own) as resources of an AOT-processed application: Flyway loads them from
 * {@code classpath:db/sumi/{vendor}}, and a native image holds only the resources registered.
 * Registered in {@code META-INF/spring/aot.factories}.
 */
final class SumiRuntimeHints implements RuntimeHintsRegistrar {

    /** The migrations of every vendor: {@code db/sumi/{vendor}/R__sumi_*.sql}. */
    static final String MIGRATIONS = "db/sumi/*/*.sql";

    @Override
    public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
        hints.resources().registerPattern(MIGRATIONS);
    }
}

package com.example.sumifixtures.extra;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** The listener annotation of a binder the rule does not know by default (as @RabbitListener once its binder lands). */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface OwnListener {}

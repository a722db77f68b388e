/* weft's mpi-ext.h: the User-Level Failure Mitigation (ULFM) extension over the standard-ABI
 * handle types of mpi.h, with Open MPI 5's names and signatures, so that fault-tolerant
 * programs written for Open MPI's <mpi-ext.h> compile unchanged against weft.
 *
 * The error classes have the values weft's library raises (mpi/src/error.rs); MPIX_FT is the
 * predefined attribute key of MPI_COMM_WORLD whose value (an int*) says whether the library
 * tolerates process failures. Written by hand (the standard's tables do not cover ULFM). */
#ifndef WEFT_MPI_EXT_H
#define WEFT_MPI_EXT_H

#include <mpi.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Feature tests programs written for Open MPI use. */
#define OMPI_HAVE_MPI_EXT_FTMPI 1
#define OMPI_HAVE_MPI_EXT_FTMPI_COMPAT 1
#define OMPI_HAVE_MPIX_COMM_ISHRINK 1
#define MPIX_HAVE_FT 1

/* Error classes. */
#define MPIX_ERR_PROC_FAILED 101
#define MPIX_ERR_PROC_FAILED_PENDING 102
#define MPIX_ERR_REVOKED 103

/* The same classes without the X, as Open MPI 5's mpi.h names them (ULFM's proposed standard
 * names; ICL's ULFM tests use them). */
#ifndef MPI_ERR_PROC_FAILED
#define MPI_ERR_PROC_FAILED MPIX_ERR_PROC_FAILED
#endif
#ifndef MPI_ERR_PROC_FAILED_PENDING
#define MPI_ERR_PROC_FAILED_PENDING MPIX_ERR_PROC_FAILED_PENDING
#endif
#ifndef MPI_ERR_REVOKED
#define MPI_ERR_REVOKED MPIX_ERR_REVOKED
#endif

/* Attribute key of MPI_COMM_WORLD: fault tolerance supported. */
#define MPIX_FT 0x1001

int MPIX_Comm_revoke(MPI_Comm comm);
int MPIX_Comm_is_revoked(MPI_Comm comm, int* flag);
int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm* newcomm);
int MPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request);
int MPIX_Comm_agree(MPI_Comm comm, int* flag);
int MPIX_Comm_iagree(MPI_Comm comm, int* flag, MPI_Request* request);
int MPIX_Comm_failure_ack(MPI_Comm comm);
int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group* failedgrp);
int MPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int* num_acked);
int MPIX_Comm_get_failed(MPI_Comm comm, MPI_Group* failedgrp);

int PMPIX_Comm_revoke(MPI_Comm comm);
int PMPIX_Comm_is_revoked(MPI_Comm comm, int* flag);
int PMPIX_Comm_shrink(MPI_Comm comm, MPI_Comm* newcomm);
int PMPIX_Comm_ishrink(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request);
int PMPIX_Comm_agree(MPI_Comm comm, int* flag);
int PMPIX_Comm_iagree(MPI_Comm comm, int* flag, MPI_Request* request);
int PMPIX_Comm_failure_ack(MPI_Comm comm);
int PMPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group* failedgrp);
int PMPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int* num_acked);
int PMPIX_Comm_get_failed(MPI_Comm comm, MPI_Group* failedgrp);

#if defined(__cplusplus)
}
#endif

#endif /* WEFT_MPI_EXT_H */

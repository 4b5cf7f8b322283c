#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
__attribute__((noinline)) void triad(double*restrict a,const double*restrict b,const double*restrict c,double s,size_t n){for(size_t i=0;i<n;i++)a[i]=b[i]+s*c[i];}
__attribute__((noinline)) void triad_nt(double*restrict a,const double*restrict b,const double*restrict c,double s,size_t n){__m256d vs=_mm256_set1_pd(s);for(size_t i=0;i<n;i+=4){__m256d v=_mm256_add_pd(_mm256_load_pd(b+i),_mm256_mul_pd(vs,_mm256_load_pd(c+i)));_mm256_stream_pd(a+i,v);}_mm_sfence();}
__attribute__((noinline)) void daxpy(double*restrict y,const double*restrict x,double s,size_t n){for(size_t i=0;i<n;i++)y[i]=y[i]+s*x[i];}
__attribute__((noinline)) void saxpy(float*restrict y,const float*restrict x,float s,size_t n){for(size_t i=0;i<n;i++)y[i]=s*x[i]+y[i];}
int main(int argc,char**argv){
 size_t mib=atol(argv[1]); size_t n=mib*1024*1024/8;
 double*a=aligned_alloc(64,n*8),*b=aligned_alloc(64,n*8),*c=aligned_alloc(64,n*8);
 for(size_t i=0;i<n;i++){a[i]=0;b[i]=1;c[i]=2;}
 double best;
 best=1e9;for(int r=0;r<5;r++){double t=now();triad(a,b,c,3.0,n);t=now()-t;if(t<best)best=t;} printf("%4zu MiB/array triad     %.1f GB/s (24B/elem)\n",mib,24.0*n/best/1e9);
 best=1e9;for(int r=0;r<5;r++){double t=now();triad_nt(a,b,c,3.0,n);t=now()-t;if(t<best)best=t;} printf("%4zu MiB/array triad NT  %.1f GB/s\n",mib,24.0*n/best/1e9);
 best=1e9;for(int r=0;r<5;r++){double t=now();daxpy(a,b,3.0,n);t=now()-t;if(t<best)best=t;} printf("%4zu MiB/array daxpy     %.1f GB/s (24B/elem)\n",mib,24.0*n/best/1e9);
 size_t nf=n*2; float*x=(float*)b,*y=(float*)c;
 best=1e9;for(int r=0;r<5;r++){double t=now();saxpy(y,x,2.0f,nf);t=now()-t;if(t<best)best=t;} printf("%4zu MiB/array saxpy     %.1f GB/s (12B/elem)\n",mib,12.0*nf/best/1e9);
 printf("%f\n",a[7]+c[9]);
}
